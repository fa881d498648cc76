"""`memory-bank chat`: an interactive loop over one live conversation of a store."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from rich.console import Console

from memory_bank.store.layout import is_store

if TYPE_CHECKING:
    from memory_bank.app.bank import MemoryBank

CHAT_HELP = """Type a message to add it as a turn. Commands:
  /recall QUERY     what the memory recalls for QUERY (summary and turns)
  /ask QUESTION     the recalled turns, and the store's answer (research) if it exists
  /as NAME          speak as NAME from now on
  /summary          the running summary of evicted turns
  /info             tiers and sizes
  /consolidate      add the evicted turns to the store now
  /quit             leave (Ctrl-D too)"""


def run_chat(
    bank: MemoryBank, conversation: str, speaker: str, consolidate: bool, out: Console
) -> None:
    """Read lines until /quit or end of input; each plain line is a turn of `speaker`, dated
    now. On leaving, the evicted turns go to the store when `consolidate`."""
    memory = bank.conversation(conversation)
    info = memory.info()
    out.print(
        f"[bold]conversation {conversation}[/] ({info.turns} turns, {info.episodic_turns} "
        f"evicted) - type /help",
        highlight=False,
    )
    while True:
        try:
            line = input(f"{speaker}> ").strip()
        except EOFError:
            break
        if not line:
            continue
        command, _, argument = line.partition(" ")
        argument = argument.strip()
        if command in ("/quit", "/exit"):
            break
        if command == "/help":
            out.print(CHAT_HELP, highlight=False)
        elif command == "/as" and argument:
            speaker = argument
        elif command == "/summary":
            out.print(memory.summary or "[dim](nothing evicted yet)[/]", highlight=False)
        elif command == "/info":
            out.print_json(memory.info().model_dump_json())
        elif command == "/consolidate":
            out.print(f"consolidated {memory.consolidate()} turns into {bank.store}")
        elif command in ("/recall", "/ask") and argument:
            recalled = memory.recall(argument)
            for turn in sorted(recalled.turns, key=lambda turn: turn.turn_id):
                out.print(f"  [cyan]#{turn.turn_id}[/] {turn.text}", highlight=False)
            if command == "/ask" and is_store(bank.store):
                answered = bank.research(argument)
                out.print(f"[bold]A:[/] {answered.answer}", highlight=False)
                for source in answered.sources:
                    out.print(f"  [cyan]- {source}[/]", highlight=False)
        elif command.startswith("/"):
            out.print(f"[yellow]unknown command {command}[/] - type /help", highlight=False)
        else:
            now = datetime.now().astimezone().replace(microsecond=0)
            record = memory.add_turn(speaker, line, now)
            for note in record.dates:
                out.print(f"  [dim]{note.expression} = {note.value}[/]", highlight=False)
    info = memory.info()
    if consolidate and info.episodic_turns > info.consolidated_turns:
        out.print(f"consolidated {memory.consolidate()} evicted turns into {bank.store}")
