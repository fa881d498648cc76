"""The base of every role's typed request and result (roles.py, session_roles.py,
research_roles.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class RoleModel(BaseModel):
    """Base of role requests and results: strict fields; numpy arrays allowed."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
