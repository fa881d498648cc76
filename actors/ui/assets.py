"""The page's static files, served from memory with cache headers.

Every file is served under `/ui/assets/<build>/<name>`, where `<build>` is a hash of the whole
folder: a module's relative imports stay inside the same build, so a release changes every URL
at once and the files can be cached for a year (`immutable`). The page itself (`/ui/`) names the
build and is revalidated on every load (ETag). Each file is kept gzipped too, for clients that
accept it. Nothing is fetched from anywhere else.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
from dataclasses import dataclass
from pathlib import Path

STATIC_DIR = Path(__file__).parent / "static"
PAGE = "index.html"
BUILD_MARK = "{{build}}"
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
# The page runs only its own scripts and styles and talks only to this server.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes
    etag: str
    media_type: str

    def response_parts(self, accept_encoding: str) -> tuple[bytes, dict[str, str]]:
        """The body and the headers that describe it, gzipped when the client accepts it."""
        headers = {"ETag": self.etag, "Vary": "Accept-Encoding"}
        if "gzip" in accept_encoding.lower() and len(self.gzipped) < len(self.body):
            return self.gzipped, {**headers, "Content-Encoding": "gzip"}
        return self.body, headers


class StaticAssets:
    """The files of one folder, read on first use and kept."""

    def __init__(self, folder: Path = STATIC_DIR) -> None:
        self.folder = folder

    @functools.cached_property
    def _files(self) -> dict[str, bytes]:
        return {
            path.name: path.read_bytes()
            for path in sorted(self.folder.iterdir())
            if path.is_file() and path.suffix in MEDIA_TYPES
        }

    @functools.cached_property
    def build(self) -> str:
        digest = hashlib.sha256()
        for name, body in self._files.items():
            digest.update(name.encode() + b"\0" + hashlib.sha256(body).digest())
        return digest.hexdigest()[:12]

    @functools.cached_property
    def _assets(self) -> dict[str, Asset]:
        assets = {}
        for name, body in self._files.items():
            if name == PAGE:
                body = body.replace(BUILD_MARK.encode(), self.build.encode())
            assets[name] = Asset(
                body=body,
                gzipped=gzip.compress(body, compresslevel=9, mtime=0),
                etag='"' + hashlib.sha256(body).hexdigest()[:20] + '"',
                media_type=MEDIA_TYPES[Path(name).suffix],
            )
        return assets

    def page(self) -> Asset:
        return self._assets[PAGE]

    def get(self, name: str) -> Asset | None:
        """A file of the folder by name (the page is served only as `page()`)."""
        return self._assets.get(name) if name != PAGE else None
