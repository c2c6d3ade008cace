"""The reading list: every paper the course rests on, each with what to read it for, its chapters and a question;
the chapters a question sends students to exist."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = (ROOT / "docs" / "reading-list.md").read_text(encoding="utf-8")
PAPERS = ("GPipe", "PipeDream", "PipeDream-2BW and PipeDream-Flush", "DAPPLE", "Megatron-LM, 2021", "Chimera",
          "Zero Bubble Pipeline Parallelism", "Pipeline Parallelism with Controllable Memory", "BPipe", "Hanayo",
          "DeepSeek-V3", "Training Deep Nets with Sublinear Memory Cost", "Megatron-LM, 2019", "GShard", "PaLM", "Alpa",
          "Breadth-First Pipeline Parallelism", "Ring Attention", "The Llama 3 Herd of Models", "TorchTitan",
          "The Ultra-Scale Playbook")
#: The ppedu names a question tells students to call: each must exist, so a question cannot send them to nothing.
CALLED = re.compile(r"`(ppedu(?:\.\w+)+)")
CHAPTERS = {p.stem.split("-")[0].lstrip("0") for p in (ROOT / "notebooks").glob("[0-9]*.ipynb")}


def entries() -> dict[str, str]:
    parts = re.split(r"^## \d+\. (.+)$", TEXT.split("## Background")[0], flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def test_every_paper_has_its_entry_with_a_question():
    found = entries()
    assert sorted(found) == sorted(PAPERS)
    for paper, text in found.items():
        assert "*Read for:*" in text and "*Chapters:*" in text, paper
        question = re.search(r"\*\*Question\.\*\* (.+?)(?:\n\n|$)", text, re.S)
        assert question and question[1].strip().endswith("?"), f"{paper}: a question that asks something"


def test_the_chapters_named_exist():
    for text in entries().values():
        named = re.search(r"\*Chapters:\* (.+?)\.", text)[1]
        assert {c.strip() for c in named.split(",")} <= CHAPTERS, named


def test_every_ppedu_name_a_question_calls_exists():
    import importlib

    for paper, text in entries().items():
        for dotted in CALLED.findall(text):
            parts = dotted.split(".")
            for cut in range(len(parts), 0, -1):
                try:
                    target = importlib.import_module(".".join(parts[:cut]))
                except ImportError:
                    continue
                for attribute in parts[cut:]:
                    assert hasattr(target, attribute), f"{paper}: {dotted} does not exist"
                    target = getattr(target, attribute)
                break
