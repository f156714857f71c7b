"""Read files and folders into documents: one extractor per format (formats.py), a folder walk with skip rules
(walk.py), and the documents they make (file_documents.py)."""
