"""Which sentence pairs the contradiction rules compare, and how a graph step ships the
sentence vectors its analysis reads."""

from __future__ import annotations

import itertools
import pickle

import numpy as np

from memory_bank.graph.analysis import NodeView
from memory_bank.graph.batch import AnalyzeTask, SentenceTable, run_tasks
from memory_bank.graph.contradictions import find_contradiction, find_contradictions
from memory_bank.graph.sentence_pairs import anchored_pairs, subject_pairs
from memory_bank.graph.span_difference import differ_on_one_span
from memory_bank.graph.subjects import text_facts

TEXTS = [
    (
        "Harbour Museum",
        "The Harbour Museum opened in 1921 in Port Ellis. It was designed by Ada Crane. "
        "Its director is Tom Reyes. The museum holds 4,000 maps.",
    ),
    (
        "Harbour Museum",
        "The Harbour Museum opened in 1923. Its director is now Lena Ward, who replaced Tom "
        "Reyes. The museum holds 4,600 maps. Ada Crane was born in Leeds.",
    ),
    (
        None,
        "Ezer Weizman was born in Tel Aviv in 1924. Weizman was the president of Israel. "
        "Acme Corporation is based in Dayton. Alice Smith is the CEO of Acme Corporation.",
    ),
    (
        None,
        "Weizman was born in Haifa in 1924. Acme Corporation moved to Columbus in 2019. "
        "Bob Jones is now the CEO of Acme Corporation. The Brennet Bridge is 240 metres long.",
    ),
    (
        None,
        "The Carrow Bridge is 310 metres long. Port Ellis has 12,000 people. "
        "Lena Ward was born in Cork.",
    ),
]


def _facts(title, text, all_sentences=False):
    return text_facts(text, title, all_sentences=all_sentences)


def test_every_pair_the_rules_accept_is_compared():
    """The pairing leaves out only pairs both rules turn down: over every pair of these texts
    and every sentence pair, what the rules find (with and without a paraphrase cosine) is
    among the pairs compared."""
    accepted = compared = 0
    for (old_title, old_text), (new_title, new_text) in itertools.permutations(TEXTS, 2):
        for all_sentences, rule in ((False, "values"), (True, "span")):
            old = _facts(old_title, old_text, all_sentences)
            new = _facts(new_title, new_text, all_sentences)
            old_about = [old.about(s) for s in old.sentences]
            new_about = [new.about(s) for s in new.sentences]
            if rule == "values":
                paired = set(subject_pairs(old_about, new_about))
            else:
                paired = set(anchored_pairs(old.sentences, old_about, new.sentences, new_about))
            compared += len(paired)
            for (e, earlier), (n, later) in itertools.product(
                enumerate(old.sentences), enumerate(new.sentences)
            ):
                if rule == "values":
                    found = any(
                        find_contradiction(earlier, later, cosine, old_about[e], new_about[n])
                        for cosine in (None, 0.95)
                    )
                else:
                    found = differ_on_one_span(earlier, later, old_about[e], new_about[n])
                if found:
                    accepted += 1
                    assert (e, n) in paired, (rule, earlier.text, later.text)
    assert accepted >= 6  # the texts hold conflicts of several kinds
    total = sum(
        len(_facts(*a, s).sentences) * len(_facts(*b, s).sentences)
        for a, b in itertools.permutations(TEXTS, 2)
        for s in (False, True)
    )
    assert compared < total / 2  # and most pairs, about other subjects, are left out


def test_sentences_about_other_subjects_are_not_paired():
    old = text_facts("The Brennet Bridge is 240 metres long. Alice Smith is the CEO of Acme.")
    new = text_facts("The Carrow Bridge is 310 metres long. Bob Jones is now the CEO of Acme.")
    about = ([old.about(s) for s in old.sentences], [new.about(s) for s in new.sentences])
    assert list(subject_pairs(*about)) == [(1, 1)]


def test_a_later_text_finds_the_same_conflicts_as_a_pair_by_pair_reading():
    old = _facts(*TEXTS[0])
    new = _facts(*TEXTS[1])
    found = {(c.old_value, c.new_value) for c in find_contradictions(old, new)}
    assert ("1921", "1923") in found
    assert ("Tom Reyes", "Lena Ward") in found


def _view(node_id: str, text: str, timestamp: float, vectors: dict[str, np.ndarray]) -> NodeView:
    vector = np.zeros(4, np.float32)
    return NodeView(node_id, text, "", [], timestamp, vector, text, sentence_vectors=vectors)


def _pickling_map(function, calls):
    """A map that sends each call's arguments through pickle, as to another process; an
    argument the calls share is sent once."""
    shared = {id(a): pickle.loads(pickle.dumps(a)) for c in calls for a in c if a is calls[0][1]}
    return [
        function(*(shared.get(id(a)) or pickle.loads(pickle.dumps(a)) for a in c)) for c in calls
    ]


def test_the_analysis_reads_sentence_vectors_shipped_once_per_step():
    """A paraphrased attribute ("chief executive" / "CEO") conflicts only through the two
    sentences' cosine: the calls carry no vectors, the shared table brings them."""
    old_sentence = "Alice Smith is the chief executive of Acme Corporation."
    new_sentence = "Acme Corporation's CEO is now Bob Jones."
    alike = np.array([1.0, 0.0, 0.0, 0.0], np.float32)
    old = _view("m1", old_sentence, 1.0, {old_sentence: alike})
    new = _view("m2", new_sentence, 2.0, {new_sentence: alike})
    sent: list[tuple] = []

    def recording_map(function, calls):
        sent.extend(calls)
        return _pickling_map(function, calls)

    [found] = run_tasks([AnalyzeTask(new, [old])], recording_map)
    assert [r.relationship for r in found] == ["conflict"]
    assert found[0].contradictions[0].new_value == "Bob Jones"
    [(group, table)] = sent
    assert all(not v.sentence_vectors for t in group for v in (t.new, *t.candidates))
    assert set(table.blocks) == {"m1", "m2"}
    # Without the vectors the rules cannot read the paraphrase.
    bare = [AnalyzeTask(_view("m2", new_sentence, 2.0, {}), [_view("m1", old_sentence, 1.0, {})])]
    assert [r.relationship for r in run_tasks(bare)[0]] != ["conflict"]


def test_the_sentence_table_holds_each_node_once_in_half_precision_and_keeps_no_source_alive():
    """A huge commit reads its sentence vectors from journal files: the table copies each node's
    rows into a block of its own (the file's decoded rows can go), never stacks them all a
    second time, and halves their bytes."""
    source = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
    first = _view("m1", "a. b.", 1.0, {"A.": source[0], "B.": source[1]})
    second = _view("m2", "c.", 2.0, {"C.": source[5]})
    table = SentenceTable.of([first, second, first])

    assert [len(table.blocks[i][1]) for i in ("m1", "m2")] == [2, 1]
    assert all(block.dtype == np.float16 for _, block in table.blocks.values())
    assert not any(np.shares_memory(block, source) for _, block in table.blocks.values())
    np.testing.assert_allclose(table.vectors_of("m1")["B."], source[1], rtol=1e-3)
    np.testing.assert_allclose(table.vectors_of("m2")["C."], source[5], rtol=1e-3)
    assert table.vectors_of("unknown") == {}
    shipped = pickle.loads(pickle.dumps(table))
    np.testing.assert_array_equal(shipped.vectors_of("m1")["A."], table.vectors_of("m1")["A."])


def test_a_view_is_released_after_the_last_task_that_reads_it():
    """Each view's parsed sentences and its block of vectors go once no later task reads it:
    only the views of the tasks still to come stay parsed and in the table."""
    texts = {f"m{i}": f"The lamp of tower {i} was lit in {1900 + i}." for i in range(4)}
    unit = np.ones(4, np.float32) / 2
    views = {i: _view(i, text, float(i[1:]), {text: unit}) for i, text in texts.items()}
    tasks = [
        AnalyzeTask(views["m1"], [views["m0"]]),
        AnalyzeTask(views["m2"], [views["m1"]]),
        AnalyzeTask(views["m3"], [views["m1"]]),
    ]
    kept_after: list[tuple[set[str], set[str]]] = []

    def watching_map(function, calls):
        [(group, table)] = calls
        results = []
        for task in group:
            results.extend(function([task], table))
            seen = {v.id: v for t in group for v in (t.new, *t.candidates)}
            parsed = {i for i, v in seen.items() if v._facts is not None}
            kept_after.append((parsed, set(table.blocks)))
        return [results]

    run_tasks(tasks, watching_map)
    assert kept_after == [
        ({"m1"}, {"m1", "m2", "m3"}),
        ({"m1"}, {"m1", "m3"}),
        (set(), set()),
    ]
