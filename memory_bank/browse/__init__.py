"""Reading a store for a person: the views of the page at /ui/ (a directory with its README and
sizes, a memory with its history and neighbours, the store at a glance, a conversation), each
bounded in size, so a store of any size is browsed a piece at a time."""

from memory_bank.browse.catalog import StoreCatalog
from memory_bank.browse.conversation import conversation_list, conversation_page
from memory_bank.browse.directory import directory_page
from memory_bank.browse.memory import memory_page
from memory_bank.browse.status import store_status

__all__ = [
    "StoreCatalog",
    "conversation_list",
    "conversation_page",
    "directory_page",
    "memory_page",
    "store_status",
]
