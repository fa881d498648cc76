"""The project's error hierarchy.

Domain code raises these; only the CLI and job entry points turn them into a message and a
non-zero exit code.
"""

from __future__ import annotations


class MemoryBankError(Exception):
    """Base class of every error this project raises on purpose."""


class ConfigError(MemoryBankError):
    """A configuration file is missing, unreadable or invalid."""


class SourceError(MemoryBankError):
    """A source file could not be read or parsed (binary, corrupt, wrong encoding, ...)."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


class NothingToIngestError(MemoryBankError):
    """Every given source was empty or unreadable, so nothing could be ingested."""


class ModelLoadError(MemoryBankError):
    """The local embedding model (or tokenizer data) could not be loaded."""


class TaxonomyError(MemoryBankError):
    """A taxonomy plan failed validation."""


class StoreError(MemoryBankError):
    """The store on disk is missing, incomplete or inconsistent."""


class ToolError(MemoryBankError):
    """A navigation tool was called with invalid arguments (path escapes, missing file, ...)."""


class LLMError(MemoryBankError):
    """An LLM backend call failed after its retries, or returned unusable output."""


class SessionError(MemoryBankError):
    """An unknown or closed session, or a memory id the Query Graph does not hold."""


class StorageError(MemoryBankError):
    """A write to disk failed (no space left, permission denied, a read-only file system, ...).

    The message is one line that names the path and says what to do (`memory_bank.store.disk`).
    """

    # `path` has a default so that the error survives pickling (a Ray actor's error reaches
    # its caller pickled, rebuilt from the message, then given its attributes back).
    def __init__(self, message: str, path: str = "", errno: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.errno = errno


class StoreLockedError(StoreError):
    """Another process held the store's lock for longer than this one would wait."""


class InputTooLargeError(MemoryBankError):
    """A question, context or request is larger than the configured limits (`limits.*`)."""


class AccessDenied(MemoryBankError):
    """The caller's key lacks the permission an operation needs, or the operation reaches
    beyond the part of the store the key is limited to."""
