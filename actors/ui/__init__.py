"""The page at /ui/: its router (JSON views and static files) and the folder of its files."""

from actors.ui.routes import attach_browser, is_page_path, router

__all__ = ["attach_browser", "is_page_path", "router"]
