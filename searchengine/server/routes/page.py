"""The search page: / and its script, served from the package (no CDN, no build step)."""

from __future__ import annotations

from importlib.resources import files

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

router = APIRouter(include_in_schema=False)
_PAGE = files("searchengine.server").joinpath("page.html").read_text(encoding="utf-8")
_SCRIPT = files("searchengine.server").joinpath("page.js").read_text(encoding="utf-8")


@router.get("/", response_class=HTMLResponse)
async def search_page() -> str:
    return _PAGE


@router.get("/page.js")
async def page_script() -> Response:
    return Response(_SCRIPT, media_type="text/javascript")
