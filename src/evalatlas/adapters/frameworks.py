"""Agent-framework comparison scenarios: ``spec.yaml``, ``questions.yaml``, documents, seed.sql.

A scenario directory (upstream ``rballet/poc-ai-workflow-frameworks``, reference
framework-comparison.md sections 2 and 13) holds:

- ``spec.yaml``: name, version, description, ``scenario_type``, ``documents_dir``,
  ``questions_file``, ``config`` (models, chunking, ``database_seed_file``),
  ``evaluation.profile`` (+ optional ``profile_config``) and ``modes.<mode>`` limits;
- ``questions.yaml``: ``questions: [{id, text, expected_answer, expected_sources,
  metadata}]``; the metadata carries the profile annotations (``required_hops``,
  ``required_tools``, ``required_agents``, ``difficulty``...);
- ``documents_dir/*.md``: the knowledge base, sorted, each named by its basename;
- ``data/seed.sql``: SQL seed data for the agentic scenarios (read as text, never run).

:func:`load_scenario` is the one entry point; the runner and the results adapter both use
it, so every consumer sees the same questions and the same ids. The same rules as
upstream apply: ``scenario_type`` comes from the spec, else questions.yaml, else
``rag_qa``; the profile from ``evaluation.profile``, else ``default``.

Also here: :func:`safe_id` and :func:`trajectory_id_for`, the episode-id convention of
the framework comparison (``f"{question_id}__run{run}"``, made safe for directory names).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalatlas.errors import InputError
from evalatlas.records.ids import check_safe_id

SPEC_FILE = "spec.yaml"
DEFAULT_PROFILE = "default"
DEFAULT_SCENARIO_TYPE = "rag_qa"


class Document(BaseModel):
    """One knowledge-base document; ``source`` is the file's basename, as upstream."""

    model_config = ConfigDict(frozen=True)

    source: str
    path: Path
    text: str


class Question(BaseModel):
    """One scenario question. ``metadata`` holds the profile annotations unchanged."""

    model_config = ConfigDict(extra="allow")

    id: str
    text: str
    expected_answer: str = ""
    expected_sources: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Scenario(BaseModel):
    """A loaded scenario: spec fields, documents, questions and the SQL seed text."""

    name: str
    version: str | None = None
    description: str = ""
    scenario_type: str = DEFAULT_SCENARIO_TYPE
    profile: str = DEFAULT_PROFILE
    profile_config: dict[str, Any] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    modes: dict[str, dict[str, Any]] = Field(default_factory=dict)
    root: Path
    documents: list[Document] = Field(default_factory=list)
    questions: list[Question] = Field(default_factory=list)
    seed_sql_path: Path | None = None
    seed_sql: str | None = None

    def mode_config(self, mode: str) -> dict[str, Any]:
        """The ``modes.<mode>`` settings; a clear error naming the known modes."""
        if mode not in self.modes:
            known = ", ".join(sorted(self.modes)) or "(none)"
            raise InputError.at(self.root / SPEC_FILE, f"unknown mode {mode!r}; known: {known}",
                                field="modes")
        return dict(self.modes[mode])

    def question(self, question_id: str) -> Question | None:
        """The question with this id, or None."""
        for q in self.questions:
            if q.id == question_id:
                return q
        return None

    @property
    def llm_model(self) -> str | None:
        value = self.config.get("llm_model")
        return str(value) if value is not None else None


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError.at(path, "file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError.at(path, f"cannot read: {exc}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise InputError.at(path, f"invalid YAML: {getattr(exc, 'problem', exc)}",
                            line=line) from None


def _require_mapping(value: Any, path: Path, field: str | None = None) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError.at(path, f"expected a mapping, got {type(value).__name__}", field=field)
    return value


def _load_questions(path: Path) -> tuple[list[Question], dict[str, Any]]:
    data = _require_mapping(_read_yaml(path), path)
    raw = data.get("questions")
    if not isinstance(raw, list):
        raise InputError.at(path, "expected a 'questions' list", field="questions")
    questions: list[Question] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        where = f"questions[{i}]"
        if not isinstance(item, dict):
            raise InputError.at(path, "expected a mapping", field=where)
        qid = item.get("id")
        if qid is None or str(qid).strip() == "":
            raise InputError.at(path, "question has no id", field=f"{where}.id")
        item = {**item, "id": str(qid)}
        if item.get("metadata") is None:
            item["metadata"] = {}
        if item.get("expected_sources") is None:
            item["expected_sources"] = []
        try:
            q = Question.model_validate(item)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            loc = ".".join(str(p) for p in err.get("loc", ()))
            raise InputError.at(path, err.get("msg", "invalid"), field=f"{where}.{loc}",
                                record=str(qid)) from None
        if q.id in seen:
            raise InputError.at(path, "duplicate question id", field=f"{where}.id", record=q.id)
        seen.add(q.id)
        questions.append(q)
    return questions, data


def load_scenario(path: str | Path) -> Scenario:
    """Load a scenario directory (or its ``spec.yaml``) into a :class:`Scenario`.

    Raises :class:`~evalatlas.errors.InputError` naming the file and field on bad input.
    The seed SQL is read as text only; nothing from the scenario is executed here.
    """
    p = Path(path)
    spec_path = p if p.is_file() else p / SPEC_FILE
    root = spec_path.parent
    spec = _require_mapping(_read_yaml(spec_path), spec_path)
    name = spec.get("name") or root.name
    questions_file = spec.get("questions_file") or "questions.yaml"
    questions, qdata = _load_questions(root / str(questions_file))
    config = _require_mapping(spec.get("config"), spec_path, "config")
    evaluation = _require_mapping(spec.get("evaluation"), spec_path, "evaluation")
    modes_raw = _require_mapping(spec.get("modes"), spec_path, "modes")
    modes = {str(k): _require_mapping(v, spec_path, f"modes.{k}") for k, v in modes_raw.items()}
    docs: list[Document] = []
    docs_dir = spec.get("documents_dir")
    if docs_dir:
        ddir = root / str(docs_dir)
        if not ddir.is_dir():
            raise InputError.at(spec_path, f"documents_dir {str(ddir)!r} is not a directory",
                                field="documents_dir")
        for doc in sorted(ddir.glob("*.md")):
            try:
                docs.append(Document(source=doc.name, path=doc,
                                     text=doc.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError.at(doc, f"cannot read document: {exc}") from None
    seed_path: Path | None = None
    seed_sql: str | None = None
    if config.get("database_seed_file"):
        seed_path = root / str(config["database_seed_file"])
        try:
            seed_sql = seed_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError.at(spec_path, f"cannot read database_seed_file: {exc}",
                                field="config.database_seed_file") from None
    scenario_type = spec.get("scenario_type") or qdata.get("scenario_type") or \
        DEFAULT_SCENARIO_TYPE
    version = spec.get("version")
    return Scenario(
        name=str(name),
        version=str(version) if version is not None else None,
        description=str(spec.get("description") or ""),
        scenario_type=str(scenario_type),
        profile=str(evaluation.get("profile") or DEFAULT_PROFILE),
        profile_config=_require_mapping(evaluation.get("profile_config"), spec_path,
                                        "evaluation.profile_config"),
        config=config,
        modes=modes,
        root=root,
        documents=docs,
        questions=questions,
        seed_sql_path=seed_path,
        seed_sql=seed_sql,
    )


_UNSAFE = re.compile(r"[^A-Za-z0-9._\-]+")


def safe_id(value: str) -> str:
    """A directory-safe form of an id: runs of other characters become ``_``.

    ``..`` is collapsed too, so the result always passes ``check_safe_id``.
    """
    text = _UNSAFE.sub("_", str(value)).strip("_") or "q"
    while ".." in text:
        text = text.replace("..", "_")
    text = text.replace(".archived_", "_archived_")
    if text in {".", ""}:
        text = "q"
    return check_safe_id(text[:200], "trajectory_id")


def trajectory_id_for(question_id: str, run: int) -> str:
    """The episode id of one question in one run: ``f"{question_id}__run{run}"`` (safe)."""
    return safe_id(f"{question_id}__run{run}")
