"""Shared by the agents' tests: a store of two teams' notes, and the agents' HTTP routes served
without Ray (the same routers, guard and MCP endpoint the Serve app mounts)."""

from __future__ import annotations

import shutil
from pathlib import Path

from fastapi import FastAPI

from memory_bank.agents.gateway import MemoryGateway

# Two teams whose notes share no distinctive word: a key for one must never surface the other's
# (Falcon, Dana, Lisbon are team A's; Orion, Marco, Tuesday rotations are team B's).
TEAM_NOTES = {
    "team-a/falcon_launch.md": """# Falcon launch plan

Project Falcon launches on 12 March 2026 from the Lisbon office. Dana owns the launch
checklist and signs off the release candidate two days before. The launch review meets every
Thursday until then.
""",
    "team-a/falcon_budget.md": """# Falcon budget

The Falcon budget for 2026 is 40,000 euros, of which 15,000 go to the Lisbon design agency.
Dana approves any spending above 2,000 euros; smaller items need no approval.
""",
    "team-b/orion_oncall.md": """# Orion on-call rotation

The Orion service on-call rotation changes every Tuesday at 10:00. Marco keeps the schedule and
the escalation list; a page that is not acknowledged within fifteen minutes goes to him.
""",
    "team-b/orion_hiring.md": """# Orion hiring

Team Orion hires two backend engineers this quarter. The interview loop has four rounds: a
phone screen, a systems design interview, a coding exercise and a talk with Marco.
""",
}


def write_team_notes(directory: Path) -> Path:
    for name, text in TEAM_NOTES.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return directory


def copy_store(template: Path, target_parent: Path) -> Path:
    """A private copy of a store made by `team_store_template` (its folder: the store link,
    its versions and siblings, and the notes it was made from), for a test that writes."""
    shutil.copytree(template.parent, target_parent, symlinks=True, dirs_exist_ok=True)
    return target_parent / template.name


def agents_app(gateway: MemoryGateway, bound_host: str | None = "127.0.0.1") -> FastAPI:
    """The Serve app's routes and guards around `gateway`, for uvicorn (no Ray)."""
    from actors.http_app import http_app
    from actors.serve_agents import install_agents
    from actors.ui import attach_browser

    app = http_app()
    attach_browser(app, str(gateway.store), gateway.config)
    install_agents(app, gateway, bound_host)
    return app


def browse_tree(http) -> dict[str, dict]:
    """Every directory page the page's /browse/ views show `http`'s key, by tree path."""
    pages: dict[str, dict] = {}
    waiting = ["/"]
    while waiting:
        path = waiting.pop()
        response = http.get("/browse/directory", params={"path": path, "limit": 500})
        assert response.status_code == 200, response.text
        pages[path] = response.json()
        waiting += [entry["path"] for entry in pages[path]["directories"]]
    return pages


def memories_below(pages: dict[str, dict], path: str) -> list[dict]:
    """The memories listed in directory `path` and every directory below it."""
    return [
        memory
        for directory, page in pages.items()
        if path == "/" or directory == path or directory.startswith(path + "/")
        for memory in page["files"]
    ]
