"""The research loop (plan -> search -> integrate -> reflect) on a small store of real facts.

The bridge case: "Transfiguration of Vincent" names its artist, M. Ward, but the page that says
where M. Ward is from is titled "Musicians of Portland, Oregon": no title link leads there. The
loop has to read the name in the first passage and search for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig
from memory_bank.errors import ToolError
from memory_bank.ingest.executor import LocalExecutor
from memory_bank.research.entities import name_mentions, names_in_question
from memory_bank.store.reader import StoreReader

DOCUMENTS = {
    "transfiguration_of_vincent.md": """# Transfiguration of Vincent

Transfiguration of Vincent is the third studio album by M. Ward. It was released by Merge
Records in 2003. The album takes its name from a song that John Fahey wrote for a friend who
had died, and it mixes folk songs, blues and instrumental pieces recorded on old tape machines.
""",
    "portland_musicians.md": """# Musicians of Portland, Oregon

Portland has a lively independent music scene. Elliott Smith moved to Portland as a child and
began his career there in the band Heatmiser. M. Ward is an American singer-songwriter and
guitarist from Portland, Oregon, who also records with Zooey Deschanel as She & Him and with
the supergroup Monsters of Folk. The Decemberists formed in Portland in 2000 and took their
name from the Decembrist revolt of 1825.
""",
    "strange_mercy.md": """# Strange Mercy

Strange Mercy is the third studio album by the American singer-songwriter St. Vincent, the
stage name of Annie Clark. It was released on 4AD in September 2011 and reached number 19 on
the Billboard 200. Critics praised its guitar work and its songs about anxiety.
""",
    "tulsa.md": """# Tulsa, Oklahoma

Tulsa is the second-largest city in the state of Oklahoma. Annie Clark grew up in Dallas,
Texas, although she was born in Tulsa. The city is known for its Art Deco architecture and
for the Gilcrease Museum, which holds a large collection of art of the American West.
""",
    "python_concurrency.md": """# Python concurrency

The Global Interpreter Lock (GIL) in CPython allows only one thread to execute Python bytecode
at a time. Threads still help for I/O-bound work because the GIL is released while a thread
waits on sockets and files. CPU-bound code should use multiprocessing, which runs one
interpreter per process, each with its own GIL.
""",
    "sourdough.md": """# Baking sourdough bread

A sourdough starter is a culture of wild yeast and lactic acid bacteria kept in flour and
water. Feeding the starter twice a day keeps it active; it is ready to bake with when it
doubles in size within six hours of a feeding. Shaped loaves proof overnight in the fridge.
""",
}
BRIDGE_QUESTION = (
    "Transfiguration of Vincent is the third studio album by a singer-songwriter from what state?"
)


@pytest.fixture(scope="module")
def bank(tmp_path_factory, embedder) -> MemoryBank:
    corpus = tmp_path_factory.mktemp("research_corpus")
    for name, text in DOCUMENTS.items():
        (corpus / name).write_text(text, encoding="utf-8")
    config = AppConfig()
    memory_bank = MemoryBank(
        tmp_path_factory.mktemp("research") / "store",
        config=config,
        executor=lambda c: LocalExecutor(c, embedder),
        embedder=embedder,
    )
    memory_bank.add(files=[corpus])
    return memory_bank


def _rounds(result) -> int:
    return sum(1 for step in result.steps if step.action == "plan")


def _source_files(bank: MemoryBank, result) -> list[str]:
    memories = StoreReader(bank.store).memories()
    source_of = dict(
        zip(
            memories.column("path").to_pylist(),
            memories.column("source").to_pylist(),
            strict=True,
        )
    )
    return [Path(source_of[path]).name for path in result.sources]


def test_a_bridge_whose_second_page_no_title_names_is_found_by_the_name_read(bank) -> None:
    result = bank.research(BRIDGE_QUESTION)

    files = _source_files(bank, result)
    assert files[:2] == ["transfiguration_of_vincent.md", "portland_musicians.md"], files
    assert "Oregon" in result.answer
    assert _rounds(result) >= 2
    follow_ups = [s.target for s in result.steps if s.action == "search" and "Ward" in s.target]
    assert follow_ups, result.trajectory  # round two searched for the name read in round one
    assert "round 2" in result.trajectory and "reflect" in result.trajectory


def test_the_title_links_do_not_reach_the_second_page(bank) -> None:
    """What makes the case a test of the loop: one hop of title links gets nowhere."""
    from memory_bank.index.corpus import StoreCorpus

    corpus = StoreCorpus(StoreReader(bank.store))
    graph = corpus.link_graph()
    album = next(i for i, s in enumerate(corpus.sources) if s.endswith("of_vincent.md"))
    portland = corpus.document_ids[
        next(i for i, s in enumerate(corpus.sources) if s.endswith("portland_musicians.md"))
    ]
    assert portland not in graph.named_by_chunk(album)


def test_a_question_the_first_round_answers_stops_after_one_round(bank) -> None:
    result = bank.research("What does the Global Interpreter Lock in CPython allow?")

    assert _rounds(result) == 1
    assert "enough" in next(s.detail for s in result.steps if s.action == "reflect")
    assert _source_files(bank, result)[0] == "python_concurrency.md"
    assert "one thread" in result.answer


def test_max_iterations_bounds_the_rounds(bank) -> None:
    one = bank.research(BRIDGE_QUESTION, max_iterations=1)
    assert _rounds(one) == 1
    assert "max_iterations=1" in one.trajectory
    assert one.sources  # one round still answers from what it found

    with pytest.raises(ToolError):
        bank.research(BRIDGE_QUESTION, max_iterations=0)
    with pytest.raises(ToolError):
        bank.research("   ")


def test_research_on_a_store_with_nothing_relevant_says_so(bank) -> None:
    result = bank.research("Which Roman emperor built the wall across northern Britain?")
    assert result.confidence < 0.5 or "does not contain" in result.answer


def test_names_are_read_from_prose() -> None:
    text = (
        "Transfiguration of Vincent is the third studio album by M. Ward. In 2003 he toured "
        'with the "Monsters of Folk" and played the University of Oregon on Friday, 17 May.'
    )
    names = [mention.text for mention in name_mentions(text)]
    assert "Transfiguration of Vincent" in names and "M. Ward" in names
    assert "Monsters of Folk" in names and "University of Oregon" in names
    assert "In" not in names and "Friday" not in names and "May" not in names
    assert names_in_question("Which band was formed first, The Exies or Circus Diablo?", []) == [
        "Exies",
        "Circus Diablo",
    ]
