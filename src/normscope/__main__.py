from normscope.cli import main

main()
