"""Small files the reading tests write themselves: Markdown, HTML, a PDF with a text layer (written byte by byte,
as a PDF producer would), one without, and an encrypted one."""

from __future__ import annotations

import io
from pathlib import Path

MARKDOWN = """---
title: Garden notes
tags: [plants, soil]
year: 2024
---
# Watering

Water the seed **every** morning; the soil must stay moist.

## In winter

Water less when it is cold. See [the guide](https://example.org).

```python
print("code is kept")
```

# Harvest

Pick the beans when the pods snap.
"""

HTML = """<!DOCTYPE html>
<html><head><title>Bike repair</title><script>var tracking = 1;</script><style>p { color: red }</style></head>
<body><nav>Home | About | Contact</nav>
<main><h1>Fixing a flat tire</h1><p>To fix a puncture, take the wheel off and find the hole.</p>
<h2>Patching the tube</h2><p>Roughen the tube, apply glue, then press the patch on.</p></main>
<footer>Copyright 2024</footer></body></html>
"""


def pdf_bytes(pages: list[str]) -> bytes:
    """A PDF whose pages hold these lines of text (Helvetica), with a correct cross-reference table."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * n} 0 R" for n in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>")
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for number, text in enumerate(pages):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {5 + 2 * number} 0 R >>"
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1"))
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for offset in offsets:
        out.write(f"{offset:010d} 00000 n \n".encode())
    out.write(f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode())
    return out.getvalue()


def encrypted_pdf(path: Path, pages: list[str]) -> Path:
    """A PDF that opens only with a password."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(pages))))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="RC4-128")
    with path.open("wb") as handle:
        writer.write(handle)
    return path


def scanned_pdf(path: Path) -> Path:
    """A PDF with a page and no text layer, as a scanner makes without OCR."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    with path.open("wb") as handle:
        writer.write(handle)
    return path


def notes_folder(root: Path) -> Path:
    """A folder of notes: Markdown, HTML, a PDF and a .txt, a nested folder, and a hidden one."""
    (root / "guides").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    (root / "garden.md").write_text(MARKDOWN, encoding="utf-8")
    (root / "guides" / "bike.html").write_text(HTML, encoding="utf-8")
    (root / "guides" / "manual.pdf").write_bytes(
        pdf_bytes(["The oven must be hot before the bread goes in.", "Salt the soup at the end."])
    )
    (root / "todo.txt").write_text("Buy a ticket for the train.\n\nBook a hotel in the city.\n", encoding="utf-8")
    return root
