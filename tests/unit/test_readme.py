"""README composition: the seed 000 §3.2 format, titles, bullets and bottom-up descriptions."""

from __future__ import annotations

from memory_bank.schemas import DirectoryNode
from memory_bank.taxonomy.readme import (
    ReadmeFileEntry,
    ReadmeHighlight,
    SubtreeSummary,
    compose_readme,
    describe_directory,
    readme_key_terms,
    readme_title,
)

FILES = [
    ReadmeFileEntry(
        "postgresql_indexes.md",
        "postgresql_indexes",
        "PostgreSQL uses B-tree indexes to speed up SQL queries.",
    ),
    ReadmeFileEntry(
        "mysql_innodb_transactions.md",
        "mysql_innodb_transactions",
        "MySQL's InnoDB engine gives ACID transactions\nwith row-level locking.",
    ),
    ReadmeFileEntry(
        "sqlite_embedded.md", "sqlite_embedded", "SQLite is an embedded SQL database in one file."
    ),
]

LEAF = DirectoryNode(
    path="/storage/sql_databases",
    name="sql_databases",
    description="Memories about SQL, databases and indexes, including: PostgreSQL uses B-tree "
    "indexes to speed up SQL queries.",
    chunk_indices=[0, 1, 2],
)
OTHER_LEAF = DirectoryNode(
    path="/storage/key_value_caches",
    name="key_value_caches",
    description="Memories about Redis, caches and keys,\nincluding: Redis keeps keys in memory.",
    chunk_indices=[3, 4, 5, 6],
)
PARENT = DirectoryNode(path="/storage", name="storage", description="", children=[LEAF, OTHER_LEAF])


def _description(readme: str) -> str:
    return readme.split("\n\n")[1]


def test_leaf_readme_has_the_exact_layout():
    readme = compose_readme(LEAF, [], FILES)
    assert readme == (
        "# Sql Databases\n"
        "\n"
        "Memories about SQL, databases and indexes, including: PostgreSQL uses B-tree indexes to "
        "speed up SQL queries. It holds 3 memories: postgresql indexes, mysql innodb "
        "transactions and sqlite embedded.\n"
        "\n"
        "## Contents\n"
        "\n"
        "- **postgresql_indexes.md**: PostgreSQL uses B-tree indexes to speed up SQL queries.\n"
        "- **mysql_innodb_transactions.md**: MySQL's InnoDB engine gives ACID transactions with "
        "row-level locking.\n"
        "- **sqlite_embedded.md**: SQLite is an embedded SQL database in one file.\n"
    )


def test_leaf_description_adds_terms_several_memories_share():
    leaf = LEAF.model_copy(update={"description": "Memories about storage engines."})
    description = _description(compose_readme(leaf, [], FILES))
    assert description.endswith("sqlite embedded. Several of them mention sql.")


def test_parent_readme_lists_subdirectories_and_is_described_from_them():
    readme = compose_readme(PARENT, PARENT.children, [])
    lines = readme.splitlines()
    assert lines[0] == "# Storage"
    assert lines[-2:] == [
        f"- **sql_databases/**: {LEAF.description}",
        "- **key_value_caches/**: Memories about Redis, caches and keys, including: Redis keeps "
        "keys in memory.",
    ]
    # Described from the children (no description given): sizes, largest first, said once.
    assert _description(readme) == (
        "7 memories in 2 subdirectories: key value caches (4) and sql databases (3)."
    )


def test_parent_description_from_the_plan_is_not_followed_by_a_second_listing():
    planned = PARENT.model_copy(
        update={
            "description": "7 memories about storage in 2 subdirectories: key value caches (4) "
            "and sql databases (3)."
        }
    )
    assert _description(compose_readme(planned, PARENT.children, [])) == planned.description
    # A description that does not list the subdirectories gets the structure sentences.
    other = PARENT.model_copy(update={"description": "Databases and caches."})
    description = _description(compose_readme(other, PARENT.children, []))
    assert "2 subdirectories: sql databases and key value caches" in description
    assert "7 memories, the most in key value caches (4)" in description
    assert description.count(". ") + 1 == 3


def test_root_title_defaults_to_memory_bank_or_the_store_title():
    root = DirectoryNode(path="/", name="", description="Memories about storage.")
    assert compose_readme(root, [PARENT], []).startswith("# Memory Bank\n\nMemories about storage.")
    assert readme_title(root, "Team Notes") == "Team Notes"
    assert readme_title(LEAF) == "Sql Databases"


def test_bullets_never_span_lines_and_empty_texts_get_a_fallback():
    odd = DirectoryNode(path="/a/b_c", name="b_c", description="  ", chunk_indices=[1])
    readme = compose_readme(
        PARENT, [odd], [ReadmeFileEntry("x_y.md", "x_y", "first line\n\nsecond line")]
    )
    bullets = [line for line in readme.splitlines() if line.startswith("- ")]
    assert bullets == ["- **b_c/**: Memories on b c.", "- **x_y.md**: first line second line"]


def test_describe_directory_builds_a_sentence_from_the_children():
    from_files = describe_directory([], FILES)
    assert from_files.startswith("Memories about sql")
    assert "PostgreSQL uses B-tree indexes" in from_files
    from_dirs = describe_directory([LEAF, OTHER_LEAF], [])
    assert from_dirs == (
        "7 memories in 2 subdirectories: key value caches (4) and sql databases (3)."
    )
    shared = LEAF.model_copy(update={"name": "sql_indexes", "path": "/storage/sql_indexes"})
    # Terms several subdirectories share say what the parent is about; template words do not.
    from_similar = describe_directory([LEAF, shared], [])
    assert from_similar.startswith("6 memories about sql and indexes in 2 subdirectories")
    assert describe_directory([], []) == "An empty directory."


def test_empty_directory_and_determinism():
    empty = DirectoryNode(path="/", name="", description="No memories yet.")
    readme = compose_readme(empty, [], [])
    assert readme.endswith("## Contents\n\n_No entries yet._\n")
    assert compose_readme(PARENT, PARENT.children, FILES) == compose_readme(
        PARENT, PARENT.children, FILES
    )


def test_highlights_open_the_readme_as_its_summary():
    highlights = (
        ReadmeHighlight("PostgreSQL uses B-tree indexes to speed up SQL queries.", FILES[0].name),
        ReadmeHighlight("SQLite is an embedded SQL database in one file", FILES[2].name),
    )
    readme = compose_readme(LEAF, [], FILES, subtree=SubtreeSummary(highlights))
    assert readme.startswith(
        "# Sql Databases\n\nPostgreSQL uses B-tree indexes to speed up SQL queries. SQLite is an "
        "embedded SQL database in one file.\n\nIt holds 3 memories about SQL, databases and "
        "indexes."
    )
    assert readme.count("PostgreSQL uses B-tree indexes") == 2  # summary, then the contents
    parent = compose_readme(PARENT, PARENT.children, [], subtree=SubtreeSummary(highlights[:1]))
    summary, holding = parent.split("\n\n")[1:3]
    assert summary == "PostgreSQL uses B-tree indexes to speed up SQL queries."
    assert holding == (
        "It holds 7 memories in 2 subdirectories: key value caches (4) and sql databases (3)."
    )
    assert compose_readme(LEAF, [], FILES, subtree=SubtreeSummary()) == compose_readme(
        LEAF, [], FILES
    )


def test_index_terms_close_the_readme_after_the_contents_without_the_key_terms():
    highlights = (ReadmeHighlight("PostgreSQL uses B-tree indexes.", FILES[0].name),)
    readme = compose_readme(
        LEAF,
        [],
        FILES,
        subtree=SubtreeSummary(
            highlights,
            key_terms=("postgresql", "b-tree"),
            index_terms=("postgresql", "vacuum", "wal"),
        ),
    )
    key_terms = readme.index("## Key terms")
    contents = readme.index("## Contents")
    index = readme.index("## Index")
    assert key_terms < contents < index
    assert readme.rstrip().endswith("vacuum, wal")  # "postgresql" is shown once, as a key term
    assert "vacuum" not in readme[:index]
    assert "## Index" not in compose_readme(LEAF, [], FILES, subtree=SubtreeSummary(highlights))
    # What tree search quotes of a README it offers as an overview.
    assert readme_key_terms(readme) == "postgresql, b-tree"
    assert readme_key_terms(compose_readme(LEAF, [], FILES)) == ""
