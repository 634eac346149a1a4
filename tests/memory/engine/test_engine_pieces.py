from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from memory.engine import tokens
from memory.engine.compaction import SourceItem, build_prompt, parse_reply
from memory.engine.hashing import content_hash


def test_engine_imports_nothing_from_django():
    code = (
        "import sys, pkgutil, importlib, memory.engine as e\n"
        "for m in pkgutil.walk_packages(e.__path__, 'memory.engine.'): importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n == 'django' or n.startswith('django.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


ENGINE = Path(__file__).resolve().parents[3] / "memory" / "engine"
# Modules that open connections; the engine is handed their results, it never makes the calls.
NETWORK = (
    "socket",
    "ssl",
    "http",
    "urllib",
    "httpx",
    "requests",
    "openai",
    "google",
    "aiohttp",
    "websockets",
)


def _imports(path: Path) -> set[str]:
    """Every module `path` imports, absolute (relative imports resolved inside memory.engine)."""
    package = "memory." + ".".join(path.relative_to(ENGINE.parent).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.add(f"{base}.{node.module}" if node.module else base)
            else:
                found.add(node.module or "")
    return found


def test_engine_imports_nothing_of_the_project_outside_it_and_no_network_client():
    sources = sorted(ENGINE.rglob("*.py"))
    assert len(sources) > 15
    for path in sources:
        for module in _imports(path):
            top = module.split(".")[0]
            assert top not in ("django", "ottoweb", "lessons", "ninja", "celery"), (path, module)
            assert top != "memory" or module.startswith("memory.engine"), (path, module)
            assert top not in NETWORK, (path, module)


def test_engine_starts_no_thread():
    for path in sorted(ENGINE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        names = {
            c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "") for c in calls
        }
        assert not names & {
            "Thread",
            "ThreadPoolExecutor",
            "ProcessPoolExecutor",
            "Timer",
            "start_new_thread",
        }, path


def test_token_counts_are_exact_cl100k_offline():
    assert tokens.encoding() is not None  # cl100k_base itself, not the length estimate
    assert tokens.count_tokens("hello world") == 2
    assert tokens.count_tokens("tiktoken is great!") == 6
    assert tokens.count_tokens("") == 0


def test_truncate_to_tokens_keeps_a_prefix_that_fits():
    text = "The quick brown fox jumps over the lazy dog. " * 20
    cut = tokens.truncate_to_tokens(text, 10)
    assert text.startswith(cut)
    assert tokens.count_tokens(cut) <= 10


def test_content_hash_is_sha256_of_the_text():
    assert content_hash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_parse_reply_reads_citations_in_several_forms():
    reply = "\n".join(
        [
            "- Deploys moved to Tuesday [sources: 1, 3]",
            "* Budget agreed (source: 2)",
            "3. Tests are flaky [Sources: 4-5]",
            "A line with no citation at all",
            "- Hallucinated [sources: 17]",
            "[sources: 1]",
        ]
    )
    parsed, unparsed = parse_reply(reply, 5)

    assert [(p.text, p.sources) for p in parsed] == [
        ("Deploys moved to Tuesday", (1, 3)),
        ("Budget agreed", (2,)),
        ("Tests are flaky", (4, 5)),
    ]
    assert unparsed == 3


def test_prompt_numbers_every_item():
    prompt = build_prompt([SourceItem(1, "user", "alpha"), SourceItem(2, "bullet", "beta")])
    assert prompt.endswith("[1] (user) alpha\n[2] (bullet) beta")
    assert "[sources: N, M]" in prompt


FEEDBACK = """
from memory.engine.retrieval import feedback_terms
texts = ["kiln glaze pottery studio", "glaze kiln pottery evening", "kiln studio glaze class"]
print(" ".join(feedback_terms(texts, "what did she make", limit=3)))
"""


def test_feedback_words_are_the_same_in_every_process():
    """Ties broken by a set's order changed with each process's string hashing (and the score)."""
    runs = {
        subprocess.run(
            [sys.executable, "-c", FEEDBACK],
            env={"PYTHONHASHSEED": str(seed), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in range(8)
    }
    # kiln, glaze: in all three texts; pottery and studio: two each, pottery met first.
    assert runs == {"kiln glaze pottery"}


def test_named_times_reads_months_and_years_and_not_the_verb_may():
    from datetime import datetime, timedelta, timezone

    from memory.engine.retrieval import in_named_time, named_times

    assert named_times("What did Nate share in November 2022?") == [(2022, 11)]
    assert named_times("What did they discuss on 7 July, 2023?") == [(2023, 7)]
    assert named_times("What charity event did John organize recently in 2024?") == [(2024, None)]
    assert named_times("Where did she go last May?") == [(None, 5)]
    assert named_times("What may Melanie do next?") == []
    assert named_times("Where does Caroline live?") == []
    # The turn's own local time decides: 23:30 on 30 November at UTC-5 is 1 December in UTC.
    late = datetime(2022, 11, 30, 23, 30, tzinfo=timezone(timedelta(hours=-5)))
    assert in_named_time(late, [(2022, 11)])
    assert not in_named_time(late, [(2022, 12)])
    assert in_named_time(late, [(None, 11)]) and in_named_time(late, [(2022, None)])
    assert not in_named_time(None, [(2022, 11)])


def test_a_question_naming_a_speaker_is_put_in_their_own_first_person():
    from memory.engine.retrieval import first_person

    assert first_person("What does Melanie do to destress?", "Melanie") == "What do I do to destress?"
    assert (
        first_person("What is Caroline's relationship status?", "Caroline")
        == "What is my relationship status?"
    )
    assert first_person("What do Melanie’s kids like?", "Melanie") == "What do my kids like?"
    assert first_person("What did James' dog eat?", "James") == "What did my dog eat?"
    assert (
        first_person("Where has Melanie camped with her family?", "Melanie")
        == "Where have I camped with my family?"
    )
    assert (
        first_person("Would Caroline pursue it if she is moved?", "Caroline")
        == "Would I pursue it if I am moved?"
    )
    assert first_person("What did Nate give himself?", "Nate") == "What did I give myself?"
    # The verb keeps its capital.
    assert first_person("Does Melanie like hiking? Has she?", "Melanie") == "Do I like hiking? Have I?"


def test_only_the_speakers_name_as_written_is_rewritten():
    from memory.engine.retrieval import first_person

    assert first_person("What does Melanies do?", "Melanie") is None
    assert first_person("Where does Caroline live?", "Melanie") is None
    # A name is a name as the speaker writes it, and not after a determiner.
    assert first_person("Where will the party be?", "Will") is None
    assert first_person("What did the user say about her deadline?", "user") is None
    # A name with regex characters is read literally.
    assert first_person("What did bot.v2 answer?", "bot.v2") == "What did I answer?"
    assert first_person("What did botxv2 answer?", "bot.v2") is None
    # "ſ" matches "s" case-insensitively in Unicode; the verbs are matched in ASCII only.
    assert first_person("Where waſ Melanie?", "Melanie") == "Where waſ I?"
    # With another speaker named, "her" may be theirs: pronouns=False leaves them.
    assert (
        first_person("What did Caroline give Melanie for her birthday?", "Caroline", pronouns=False)
        == "What did I give Melanie for her birthday?"
    )


def test_a_name_is_read_as_written_unless_the_question_has_no_capitals():
    from memory.engine.retrieval import names_speaker

    assert names_speaker("What did Will say?", "Will")
    assert not names_speaker("Where will Ana go?", "Will")
    # All lower case says nothing by its case: the name counts in any case, unless it is a common word.
    assert names_speaker("what did melanie paint?", "Melanie")
    assert not names_speaker("where will we meet?", "Will")
    assert not names_speaker("What did melanie paint?", "Melanie")
    # "that" before a name is most often a conjunction; "the" is a determiner.
    assert names_speaker("Is it likely that Nate has friends?", "Nate")
    assert not names_speaker("What did the user say?", "user")
    assert names_speaker("What did Dr Lee prescribe?", "Dr Lee")
    # Case tells nothing about a name stored without capitals, nor in a question all in capitals.
    assert names_speaker("What did Alice say?", "alice")
    assert names_speaker("WHAT DID MELANIE SAY ABOUT ANN'S DOG?", "Melanie")
    assert names_speaker("WHAT DID MELANIE SAY ABOUT ANN'S DOG?", "Ann")
    assert not names_speaker("", "Ann") and not names_speaker("Ann?", "")


def test_of_two_speakers_named_the_question_is_about_its_subject_unless_they_are_joined():
    from memory.engine.retrieval import speakers_asked_about

    two = {"Joanna", "Nate"}
    assert speakers_asked_about("What did Joanna plan to do with the recipe Nate promised?", two) == {
        "Joanna"
    }
    assert speakers_asked_about("What nickname does Nate use for Joanna?", two) == {"Nate"}
    assert speakers_asked_about("What do Joanna and Nate like?", two) == two
    assert speakers_asked_about("Would Joanna or Nate win?", two) == two
    assert speakers_asked_about("Joanna, Nate: who cooks?", two) == two
    assert speakers_asked_about("What do Joanna & Nate share?", two) == two
    assert speakers_asked_about("Did Joanna go hiking with Nate both times?", two) == two
    assert speakers_asked_about("What did Joanna say?", {"Joanna"}) == {"Joanna"}
    # One name inside the other's mention: the longer is meant, on every run.
    assert speakers_asked_about("What did Ann Lee tell Bob?", {"Ann", "Ann Lee"}) == {"Ann Lee"}
    three = {"Joanna", "Nate", "Tim"}
    assert speakers_asked_about("What did Joanna tell Nate about Tim?", three) == three
