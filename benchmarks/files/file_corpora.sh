#!/usr/bin/env bash
# Set-up of benchmarks/files/file_search.py (issue 23's real corpora), for the benchmark only, never the product:
#   - HTML: the Python 3.11 documentation, Debian's python3.11-doc (/usr/share/doc/python3.11/html);
#   - PDF: R's manuals, Debian's r-doc-pdf (/usr/share/R/doc/manual);
#   - Markdown: the READMEs of the Python packages installed in .venv (benchmarks/files/package_readmes.py), written to
#     ${READMES:-/tmp/filebench-readmes};
#   - the extractors compared, into this checkout's .venv (lxml_html_clean named because pip left out the
#     lxml[html_clean] extra that justext, a trafilatura dependency, asks for: trafilatura failed on every page).
# Run from the repository root as root (or with sudo for apt-get):  bash benchmarks/files/file_corpora.sh
set -euo pipefail
apt-get install -y python3.11-doc r-doc-pdf
.venv/bin/python -m pip install beautifulsoup4 selectolax trafilatura lxml_html_clean pypdf pdfminer.six 'markitdown[pdf]' markdown-it-py
.venv/bin/python benchmarks/files/package_readmes.py "${READMES:-/tmp/filebench-readmes}"
