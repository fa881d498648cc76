"""Directory names and descriptions: terms and key phrases, the naming pipeline (evidence ->
cohesive candidates -> distinct among siblings -> central phrase fallback) and descriptions."""

from __future__ import annotations

import numpy as np

from memory_bank.config import TaxonomyConfig
from memory_bank.taxonomy import (
    TaxonomyItem,
    is_valid_name,
    plan_group,
    plan_taxonomy,
    validate_taxonomy,
)
from memory_bank.taxonomy.coarse import accept_splits
from memory_bank.taxonomy.describe import describe_parent
from memory_bank.taxonomy.evidence import GroupEvidence, TermCounts, gather_evidence
from memory_bank.taxonomy.naming import (
    candidates,
    mixed_phrase,
    name_from_terms,
    name_siblings,
)
from memory_bank.taxonomy.terms import TermMatrix
from memory_bank.text.lexicon import name_words as tokenize
from memory_bank.text.lexicon import plural_key as term_key

CONFIG = TaxonomyConfig()

# (text, title, keywords): four memories on neural networks, four on PostgreSQL.
MEMORIES = [
    (
        "Neural networks learn weights from data. Deep neural networks stack many layers.",
        "neural_networks_layers",
        ["neural networks", "layers"],
    ),
    (
        "Training neural networks uses backpropagation to compute gradients layer by layer.",
        "training_neural_networks",
        ["neural networks", "backpropagation"],
    ),
    (
        "A convolutional neural network slides filters over an image.",
        "convolutional_neural_network",
        ["convolutional neural network", "filters"],
    ),
    (
        "Recurrent neural networks carry a hidden state from one token to the next.",
        "recurrent_neural_networks",
        ["recurrent neural networks", "hidden state"],
    ),
    (
        "Indexes speed up lookups. Every PostgreSQL table can have several indexes.",
        "postgresql_indexes",
        ["postgresql", "indexes"],
    ),
    (
        "The planner of PostgreSQL picks an index scan or a sequential scan.",
        "query_planner",
        ["planner", "postgresql"],
    ),
    (
        "Vacuum reclaims space in PostgreSQL after rows are updated.",
        "vacuum_space",
        ["vacuum", "postgresql"],
    ),
    (
        "Replication copies PostgreSQL data to standby servers.",
        "replication_standby",
        ["replication"],
    ),
]
GROUPS = [np.arange(4), np.arange(4, 8)]


def _matrix(memories: list[tuple[str, str, list[str]]]) -> TermMatrix:
    return TermMatrix.build(
        [text for text, _, _ in memories],
        [title for _, title, _ in memories],
        [keywords for _, _, keywords in memories],
    )


def _evidence(
    memories: list[tuple[str, str, list[str]]], groups: list[np.ndarray]
) -> list[GroupEvidence]:
    """Each memory its own document; the first row of a group is its central memory."""
    items = [
        TaxonomyItem(index=i, title=title, tldr=text, keywords=keywords, text=text)
        for i, (text, title, keywords) in enumerate(memories)
    ]
    documents = np.arange(len(memories))
    central = [int(rows[0]) for rows in groups]
    return gather_evidence(_matrix(memories), groups, documents, central, items)


def _group(size: int, documents: int, **terms: tuple[int, int, int]) -> GroupEvidence:
    counts = {term.replace("_", " "): TermCounts(*value) for term, value in terms.items()}
    return GroupEvidence(size, documents, counts, {term: term for term in counts}, "fallback")


def test_tokenize_keeps_content_words_of_any_script_and_drops_generic_ones():
    text = "The café runs 2024 PostgreSQL-15 queries on x86 at noon, 東京"
    assert tokenize(text) == ["café", "runs", "postgresql", "queries", "x86", "noon", "東京"]
    german = "Der Dom steht in der Stadt, und die Türme sind hoch."
    assert tokenize(german) == ["dom", "steht", "stadt", "türme", "hoch"]
    assert tokenize("Every year the small team meets in March for a long time") == ["team", "meets"]


def test_plural_forms_share_a_key():
    assert [term_key(word) for word in ("Networks", "queries", "indexes", "CNNs")] == [
        "network",
        "query",
        "index",
        "cnn",
    ]
    assert [term_key(word) for word in ("class", "status", "analysis", "gas")] == [
        "class",
        "status",
        "analysis",
        "gas",
    ]


def test_keyword_phrases_become_one_term_spelled_as_usually_written():
    matrix = _matrix(MEMORIES)
    assert "neural network" in set(matrix.vocabulary)
    assert matrix.spelling("neural network") == "neural networks"
    assert matrix.spelling("postgresql") == "PostgreSQL"  # written so mid-sentence
    assert matrix.spelling("vacuum") == "vacuum"  # "Vacuum" only opens a sentence
    evidence = _evidence(MEMORIES, GROUPS)
    best = [candidates(group, evidence)[0] for group in evidence]
    assert [candidate.term for candidate in best] == ["neural network", "postgresql"]
    assert best[0].cohesion == 1.0
    assert [name.name for name in name_siblings(evidence)] == ["neural_networks", "postgresql"]


def test_candidates_tell_siblings_apart():
    texts = ["postgres database rows", "postgres database index", "redis database cache"]
    texts.append("redis database keys")
    memories = [(text, "", []) for text in texts]
    evidence = _evidence(memories, [np.array([0, 1]), np.array([2, 3])])
    best = [candidates(group, evidence)[0].term for group in evidence]
    assert [group.spellings[term] for group, term in zip(evidence, best, strict=True)] == [
        "postgres",
        "redis",
    ]
    assert "database" not in best  # every sibling uses it: it tells nothing apart


def test_key_terms_outrank_words_only_in_the_text():
    evidence = _evidence(
        [("alpha beta", "", ["beta"]), ("alpha beta", "", ["beta"])], [np.arange(2)]
    )
    # "alpha" is used by every member but no member has it as a key term: no name.
    assert [candidate.term for candidate in candidates(evidence[0], evidence)] == ["beta"]
    ranked = candidates(evidence[0], evidence, cohesion_test=False)
    assert [candidate.term for candidate in ranked] == ["beta", "alpha"]


def test_a_term_of_one_member_is_no_name_and_the_central_phrase_is():
    # "coffee" describes one of three documents: the name is the central memory's phrase.
    group = _group(6, 3, coffee=(2, 1, 2), water=(2, 1, 0))
    assert candidates(group, [group]) == []
    assert name_siblings([group])[0].name == "fallback"
    # A term in most memories of only one of several documents fails as well.
    lopsided = _group(10, 4, python=(7, 1, 7))
    assert candidates(lopsided, [lopsided]) == []
    shared = _group(10, 4, python=(7, 3, 7))
    assert [candidate.term for candidate in candidates(shared, [shared])] == ["python"]


def test_siblings_get_distinct_names_most_confident_first():
    lone = _group(4, 4, jazz=(4, 4, 4))
    twin = _group(4, 4, jazz=(4, 4, 4))
    assert [name.name for name in name_siblings([lone, twin])] == ["jazz", "fallback"]
    first = _group(4, 4, jazz=(4, 4, 4))
    second = _group(4, 4, jazz=(4, 4, 4), bebop=(3, 3, 3))
    assert [name.name for name in name_siblings([first, second])] == ["jazz", "bebop"]
    # Variants of a sibling's name (or the parent's) are passed over too.
    plural = _group(4, 4, networks=(4, 4, 4), layers=(3, 3, 3))
    assert name_siblings([plural], reserved=["network"])[0].name == "layers"
    long_name = name_from_terms(["a" * 30 + " " + "b" * 40])
    assert long_name == ("a" * 30 + "_" + "b" * 40)[:60] and is_valid_name(long_name)


def _meeting(secondary: str) -> GroupEvidence:
    counts = {"meeting": TermCounts(6, 1, 6), secondary: TermCounts(2, 1, 2)}
    return GroupEvidence(6, 1, counts, {term: term for term in counts}, central_phrase="meeting")


def test_a_directory_whose_every_name_is_taken_is_named_by_what_its_description_names():
    # Three meetings say "meeting" throughout: the first takes it, the others are named by the
    # terms that set them apart (their descriptions' terms), not "meeting_2" and "meeting_3".
    groups = [_meeting("switchboard"), _meeting("disk"), _meeting("joystick")]
    assert [name.name for name in name_siblings(groups)] == ["meeting", "disk", "joystick"]
    # Nor is a directory named as its parent.
    assert name_siblings([_meeting("switchboard")], reserved=["meeting"])[0].name == "switchboard"
    # With nothing else to say, it keeps the taken name (made unique among siblings only).
    assert name_siblings([_meeting("meeting")], reserved=["meeting"])[0].name == "meeting"


def test_transcript_markup_and_speaker_labels_are_no_terms():
    texts = [
        "Grad A: so the {disfmarker} digits are read [laughter]\nGrad B: we read digits now",
        "Project Manager: the remote {vocalsound} control\nMarketing: a remote control",
    ]
    matrix = TermMatrix.build(
        texts, ["disfmarker_digits", "vocalsound_remote"], [["disfmarker"], []]
    )
    vocabulary = set(matrix.vocabulary)
    assert {"digit", "remote", "control"} <= vocabulary
    assert not vocabulary & {"disfmarker", "vocalsound", "laughter", "grad", "manager", "marketing"}


def test_parent_descriptions_list_subdirectories_largest_first():
    children = [("plants light", 7), ("coffee beans", 6), ("sourdough starter", 8)]
    assert describe_parent(["coffee", "sourdough"], children) == (
        "21 memories about coffee and sourdough in 3 subdirectories: sourdough starter (8), "
        "plants light (7) and coffee beans (6)."
    )
    many = describe_parent([], [(f"topic {number}", 1) for number in range(9)])
    assert many.startswith("9 memories in 9 subdirectories: topic 0 (1), topic 1 (1)")
    assert many.endswith("topic 6 (1) and 2 more.")


def _themed_corpus() -> tuple[list[TaxonomyItem], np.ndarray]:
    """Three themes of six memories; every text also talks about years, months and time."""
    themes = {
        "coffee": ["roasting", "arabica", "espresso"],
        "kubernetes": ["pods", "cluster", "deployment"],
        "jazz": ["bebop", "swing", "trumpet"],
    }
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((len(themes), 384))
    items: list[TaxonomyItem] = []
    vectors: list[np.ndarray] = []
    for number, (theme, words) in enumerate(themes.items()):
        for position in range(6):
            word = words[position % 3]
            text = f"Last year, {theme} and {word} took most of our time, month after month."
            items.append(
                TaxonomyItem(
                    index=len(items),
                    title=f"{theme}_{word}_year",
                    tldr=text,
                    keywords=[theme, word, "year"],
                    text=text,
                )
            )
            vectors.append(centres[number] + 0.3 * rng.standard_normal(384))
    data = np.asarray(vectors, dtype=np.float32)
    return items, data / np.linalg.norm(data, axis=1, keepdims=True)


def test_directory_names_come_from_the_themes_not_from_generic_words():
    items, vectors = _themed_corpus()
    tree = plan_taxonomy(items, vectors, CONFIG)
    assert validate_taxonomy(tree, len(items), CONFIG) == []
    names = [child.name for child in tree.children]
    assert sorted(name.split("_")[0] for name in names) == ["coffee", "jazz", "kubernetes"]
    words = {word for node in tree.iter_nodes() for word in node.name.split("_")}
    assert not words & {"year", "month", "time", "last"}
    assert tree.description.startswith("18 memories in 3 subdirectories:")
    assert all(f"{child.name.replace('_', ' ')} (6)" in tree.description for child in tree.children)
    assert "took most of our time" not in tree.description  # no memory is quoted at the root


def test_a_term_of_one_of_two_documents_is_no_name_and_the_name_says_both():
    # "coffee" is in half the memories but one of the two documents: it does not describe
    # most members, so the group is named by both documents' phrases.
    group = GroupEvidence(
        12,
        2,
        {"coffee": TermCounts(6, 1, 6), "water": TermCounts(8, 2, 0)},
        {"coffee": "coffee", "water": "water"},
        "coffee",
        document_phrases=((6, "coffee"), (6, "sourdough")),
    )
    assert candidates(group, [group]) == []  # "water": both use it, neither picked it
    assert mixed_phrase(group) == "coffee and sourdough"
    assert name_siblings([group])[0].name == "coffee_and_sourdough"
    shared = GroupEvidence(12, 2, {"bread": TermCounts(8, 2, 3)}, {"bread": "bread"})
    assert [candidate.term for candidate in candidates(shared, [shared])] == ["bread"]


def test_a_mixed_group_is_named_by_its_main_documents_honestly():
    def mixed(size: int, documents: int, *phrases: tuple[int, str]) -> str:
        return mixed_phrase(GroupEvidence(size, documents, {}, {}, "central", "", phrases))

    assert mixed(7, 2, (5, "python"), (2, "thermostat")) == "python"  # most members: one
    assert mixed(6, 3, (3, "launch"), (2, "carrots")) == "launch, carrots and more"
    assert mixed(4, 2, (2, "jazz"), (2, "blues")) == "jazz and blues"
    assert mixed(4, 2) == "central"  # no document phrases: the central memory's
    named = name_siblings([GroupEvidence(6, 3, {}, {}, "", "", ((3, "launch"), (2, "carrots")))])
    assert named[0].name == "launch_carrots_and_more"


def _documents_corpus(
    themes: dict[str, list[str]], shared: str | None
) -> tuple[list[TaxonomyItem], np.ndarray]:
    """Six memories per document (one theme each), all vectors near one direction; with
    `shared`, every memory also has that key term."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal(384)
    items: list[TaxonomyItem] = []
    vectors: list[np.ndarray] = []
    for theme, words in themes.items():
        centre = base + 0.6 * rng.standard_normal(384)
        for position in range(6):
            word = words[position % len(words)]
            text = f"{theme.capitalize()} notes: {word} and more {word}." + (
                f" All about {shared}." if shared else ""
            )
            keywords = [theme, word] + ([shared] if shared else [])
            items.append(
                TaxonomyItem(
                    index=len(items),
                    title=f"{theme}_{word}",
                    tldr=text,
                    keywords=keywords,
                    text=text,
                    source=f"/docs/{theme}.md",
                )
            )
            vectors.append(centre + 0.2 * rng.standard_normal(384))
    data = np.asarray(vectors, dtype=np.float32)
    return items, data / np.linalg.norm(data, axis=1, keepdims=True)


def test_a_group_no_term_describes_is_split_into_its_subdirectories():
    themes = {
        "lighthouse": ["lamp", "keeper", "storm"],
        "kubernetes": ["pods", "cluster", "scheduler"],
        "sourdough": ["starter", "flour", "crust"],
    }
    items, vectors = _documents_corpus(themes, shared=None)
    plan = plan_group(0, items, vectors, CONFIG)
    assert plan.node.children and len(plan.parts) == len(plan.node.children)
    assert [part.node.path for part in plan.top_level()] == [
        f"/{child.name}" for child in plan.node.children
    ]
    assert sum(part.summary.size for part in plan.parts) == len(items)
    # The same documents with a key term in common stay one group.
    items, vectors = _documents_corpus(themes, shared="hobby")
    cohesive = plan_group(0, items, vectors, CONFIG)
    assert cohesive.parts == () and cohesive.top_level() == (cohesive,)
    assert cohesive.node.name == "hobby"


def test_a_passing_mention_does_not_describe_a_document():
    # "acid" is in one of four memories of the coffee document, every memory of the bread one,
    # and a key term of neither coffee memory: it describes one document of two.
    texts = [
        ("coffee beans roast acid", "/coffee.md"),
        ("coffee beans grind", "/coffee.md"),
        ("coffee beans brew", "/coffee.md"),
        ("coffee beans cup", "/coffee.md"),
        ("bread acid dough", "/bread.md"),
        ("bread acid crust", "/bread.md"),
    ]
    items = [
        TaxonomyItem(
            index=i,
            title="",
            tldr=text,
            keywords=["acid"] if source == "/bread.md" else ["coffee", "beans", "roast", "cup"],
            text=text,
            source=source,
        )
        for i, (text, source) in enumerate(texts)
    ]
    matrix = TermMatrix.build(
        [t for t, _ in texts], ["" for _ in texts], [i.keywords for i in items]
    )
    documents = np.array([0, 0, 0, 0, 1, 1])
    group = gather_evidence(matrix, [np.arange(6)], documents, [0], items)[0]
    assert group.terms["acid"].documents == 1 and group.terms["acid"].reach == 2
    assert group.terms["acid"].memories == 3  # half the memories: it would pass by memories
    assert "acid" not in [candidate.term for candidate in candidates(group, [group])]


def test_splits_are_made_when_they_separate_the_memories_better():
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((3, 64))
    vectors = np.concatenate([centre + 0.1 * rng.standard_normal((10, 64)) for centre in centres])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    labels = np.array([0] * 20 + [1] * 10)  # the first two themes in one group
    apart = np.array([0] * 10 + [1] * 10 + [-1] * 10)
    scattered = np.array([number % 2 for number in range(20)] + [-1] * 10)
    assert accept_splits(vectors, labels, [apart], CONFIG) == [True]
    assert accept_splits(vectors, labels, [scattered], CONFIG) == [False]


def test_spoken_contractions_and_everyday_verbs_name_nothing():
    # A meeting says "don't", "let's try", "look at" in every part; a tale "she cried".
    said = "I don't know, let's try it and look at the remote control. She cried; thou art"
    assert tokenize(said) == ["remote", "control", "art"]


def test_a_whole_document_is_named_by_its_title_when_its_memories_use_a_word_of_it():
    rnn = {"state": TermCounts(4, 1, 3), "recurrent": TermCounts(4, 1, 2)}
    titled = GroupEvidence(5, 1, rnn, {t: t for t in rnn}, "", document_title="the_recurrent_nets")
    assert name_siblings([titled])[0].name == "recurrent_nets"  # not "state", one of its words
    meeting = GroupEvidence(5, 1, rnn, {t: t for t in rnn}, "", document_title="Bed002")
    assert name_siblings([meeting])[0].name == "state"  # a file name that says nothing


def test_a_title_belongs_to_a_group_holding_one_whole_document():
    from memory_bank.taxonomy.evidence import document_title

    items = [
        TaxonomyItem(0, "a", "a", source="/notes/the_water_cycle.md"),
        TaxonomyItem(1, "b", "b", source="/notes/the_water_cycle.md"),
        TaxonomyItem(2, "c", "c", source="/tales/moon-child/section_01.txt"),
        TaxonomyItem(3, "d", "d", source="/tales/moon-child/section_02.txt"),
        TaxonomyItem(4, "e", "e", source="/tales/moon-child/section_03.txt"),
    ]
    documents = np.array([0, 0, 1, 1, 1])
    assert document_title(np.array([0, 1]), documents, items) == "the_water_cycle"
    assert document_title(np.array([2, 3, 4]), documents, items) == "moon-child"  # its folder
    assert document_title(np.array([2, 3]), documents, items) == ""  # part of a story
    assert document_title(np.array([1, 2]), documents, items) == ""  # two documents
    assert document_title(np.array([0]), documents, items) == ""
