"""The server's routes, one APIRouter module per resource: search, documents, info, embeddings and the page."""
