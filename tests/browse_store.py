"""The store the browsing views are tested on (unit tests and the page in a browser): seventeen
short documents on five topics (two about the Moon landings, which the Query Graph relates),
then a later document that replaces one of their facts (the CEO of Acme), and a conversation
beside the store."""

from __future__ import annotations

from pathlib import Path

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig, TaxonomyConfig

DOCUMENTS = {
    "acme.md": "# Acme Corporation\n\nAcme Corporation is an American manufacturer of anvils, "
    "rocket skates and the RoadRunner trap. It was founded in 1948 in Phoenix, Arizona. The CEO "
    "of Acme is Alice Moreno. The company employs 4,200 people.\n",
    "globex.md": "# Globex\n\nGlobex is a logistics company based in Cypress Creek. It runs "
    "two hundred warehouses across North America and ships industrial parts by rail.\n",
    "initech.md": "# Initech\n\nInitech is a software company that maintains banking systems. "
    "Its offices moved to Austin in 2019, and it employs 900 engineers.\n",
    "sourdough.md": "# Sourdough\n\nA sourdough starter is a culture of wild yeast and lactic "
    "acid bacteria kept in flour and water. Feeding the starter twice a day keeps it active; "
    "the dough then rests in bulk fermentation for four to six hours.\n",
    "espresso.md": "# Espresso\n\nEspresso is brewed by forcing water at about 93 degrees "
    "Celsius through finely ground coffee at nine bars of pressure. A shot takes 25 to 30 "
    "seconds and yields about 30 millilitres.\n",
    "pasta.md": "# Fresh pasta\n\nFresh egg pasta is made from 00 flour and eggs, one egg per "
    "hundred grams of flour. The dough rests for thirty minutes before it is rolled thin.\n",
    "fermentation.md": "# Fermentation\n\nFermentation turns sugars into acids, gases or "
    "alcohol with yeast and bacteria. It preserves cabbage as sauerkraut and milk as yoghurt.\n",
    "mars.md": "# Mars\n\nMars is the fourth planet from the Sun. Its thin atmosphere is mostly "
    "carbon dioxide, and its surface temperature averages minus 63 degrees Celsius.\n",
    "moon.md": "# The Moon\n\nThe Moon orbits Earth every 27.3 days. Apollo 11 landed on it in "
    "July 1969, and Neil Armstrong was the first person to walk on its surface.\n",
    "apollo.md": "# Lunar exploration\n\nNASA's Apollo program sent astronauts to the Moon "
    "between 1969 and 1972. Neil Armstrong and Buzz Aldrin collected lunar rocks that "
    "scientists still study.\n",
    "jupiter.md": "# Jupiter\n\nJupiter is the largest planet of the Solar System. Its Great Red "
    "Spot is a storm larger than Earth that has lasted for centuries.\n",
    "telescopes.md": "# Telescopes\n\nA refracting telescope gathers light with a lens, a "
    "reflecting telescope with a curved mirror. The James Webb Space Telescope observes in the "
    "infrared from a point beyond the Moon.\n",
    "python_gil.md": "# Python threads\n\nThe Global Interpreter Lock in CPython lets only one "
    "thread run Python bytecode at a time. Threads still help with I/O-bound work, and "
    "multiprocessing runs one interpreter per process.\n",
    "rust.md": "# Rust ownership\n\nRust's borrow checker enforces ownership at compile time: "
    "every value has one owner, and a value has either one mutable reference or any number of "
    "shared references.\n",
    "postgres.md": "# PostgreSQL indexes\n\nA B-tree index speeds up equality and range queries "
    "in PostgreSQL. A GIN index suits full-text search and JSONB containment queries.\n",
    "jazz.md": "# Jazz\n\nJazz originated in New Orleans in the late 19th century. Louis "
    "Armstrong was one of its most influential trumpeters, and swing bands filled dance halls "
    "in the 1930s.\n",
    "baroque.md": "# Baroque music\n\nJohann Sebastian Bach wrote the Brandenburg Concertos and "
    "the Well-Tempered Clavier. Baroque music favours counterpoint and a basso continuo.\n",
}
UPDATE = (
    "acme_update.md",
    "# Acme leadership change\n\nAcme Corporation announced that Bob Tanaka is now the CEO of "
    "Acme, replacing Alice Moreno.\n",
)
CONVERSATION_ID = "trip-planning"
TURNS = [
    ("alice", "We should visit Kyoto in April for the cherry blossoms."),
    ("bob", "Good idea. The ryokan near Gion costs 30,000 yen a night."),
    ("alice", "Let's book two nights and take the train from Tokyo."),
]


# Small leaves, so eighteen memories fill several directories.
SMALL_LEAVES = TaxonomyConfig(min_leaf=2, target_leaf=3, max_leaf=4, hard_max_leaf=5)


def build_browse_store(root: Path, embedder, config: AppConfig | None = None) -> MemoryBank:
    """Write the documents under `root/sources`, ingest them into `root/store`, add the
    update in a later commit and talk a short conversation; returns the bank."""
    sources = root / "sources"
    sources.mkdir(parents=True)
    for name, text in DOCUMENTS.items():
        (sources / name).write_text(text, encoding="utf-8")
    update = sources / UPDATE[0]
    update.write_text(UPDATE[1], encoding="utf-8")
    bank = MemoryBank(root / "store", config or AppConfig(taxonomy=SMALL_LEAVES), embedder=embedder)
    bank.add(files=sorted(sources / name for name in DOCUMENTS))
    summary = bank.add(files=[update])
    if summary.commit is None or summary.commit.graph.get("conflicts") != 1:
        raise AssertionError(f"the update should replace the CEO of Acme: {summary.commit}")
    conversation = bank.conversation(CONVERSATION_ID)
    for speaker, text in TURNS:
        conversation.add_turn(speaker, text, "2026-03-01T10:00:00Z")
    return bank
