"""Machine drafts of the Theory-of-Mind fields, from any OpenAI-compatible chat endpoint.

As in the paper (appendix C.2), a model drafts context, latent need, core demand, strategies and
constraints first; annotators start from the draft and the saved annotation records what they
changed. Drafts are stored apart from human work (MachineDraft), one row per attempt, with the
raw answer and, when the model failed, an error an admin can act on. With no endpoint configured
nothing is drafted and annotators start from empty fields.

Settings: DRAFT_LLM_BASE_URL (empty = off), DRAFT_LLM_MODEL, DRAFT_LLM_API_KEY, and optionally
DRAFT_LLM_TIMEOUT_SECONDS (default 60) and DRAFT_LLM_MAX_RETRIES (default 2).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from annotation.audio.suggestions import suggestions_from_features
from annotation.labelling.models import TIER_FILE_DRAFT, MachineDraft, Strategy
from annotation.labelling.schema import SUGGESTED_CONSTRAINTS, TOM_TEXT_FIELDS, check_tom
from annotation.recording.models import Item
from webapp.jobs import JobReporter, start_job
from webapp.lib.llm_client import ChatJudgeConfig, JudgeClient, JudgeReply, JudgeRequest
from webapp.models import Job, User
from webapp.outbound import outbound_policy

PROMPT_VERSION = "tom-draft-v1"
JOB_KIND = "draft_tom"

SYSTEM_PROMPT = """You are a clinical psychologist preparing Theory-of-Mind annotations of what a \
speaker says, for an empathetic-dialogue benchmark. Read the utterance, its scenario and the \
acoustic cues, then answer with exactly one JSON object and nothing else:
{
  "context": "the functional interpretation of the utterance in its context",
  "latent_need": "the underlying psychological need beyond the surface expression",
  "core_demand": "what the speaker most urgently needs from the reply",
  "recommended_strategies": ["strategy id", ...],
  "not_recommended_strategies": ["strategy id", ...],
  "constraints": ["a style the reply must avoid", ...]
}
Strategies must be ids from this list:
{strategies}
Typical constraints: {constraints}."""


class DraftsDisabled(Exception):
    """No draft endpoint is configured (DRAFT_LLM_BASE_URL is empty)."""


class DraftsFailed(Exception):
    """Every item of a draft job failed; the message names the first error."""


@dataclass(frozen=True)
class ParsedDraft:
    tom: dict[str, Any] | None
    error: str


def draft_config() -> ChatJudgeConfig | None:
    """Return the draft endpoint's client configuration, or None when drafts are off."""
    base_url = settings.DRAFT_LLM_BASE_URL
    if not base_url:
        return None
    return ChatJudgeConfig(
        base_url=base_url,
        model=settings.DRAFT_LLM_MODEL,
        api_key=settings.DRAFT_LLM_API_KEY,
        timeout_s=float(getattr(settings, "DRAFT_LLM_TIMEOUT_SECONDS", 60.0)),
        max_retries=int(getattr(settings, "DRAFT_LLM_MAX_RETRIES", 2)),
        max_concurrency=settings.JUDGE_MAX_CONCURRENCY,
        temperature=0.0,
        json_mode=True,
        outbound=outbound_policy(),
    )


def drafts_enabled() -> bool:
    """Return True when a draft endpoint is configured."""
    return bool(settings.DRAFT_LLM_BASE_URL)


def draft_messages(item: Item, strategies: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """Return the chat messages asking for one item's ToM draft."""
    strategy_lines = "\n".join(f"- {slug}: {name}" for slug, name in strategies)
    system = SYSTEM_PROMPT.replace("{strategies}", strategy_lines).replace(
        "{constraints}", ", ".join(SUGGESTED_CONSTRAINTS)
    )
    cues = suggestions_from_features(item.recording.features) if item.recording else {}
    details = {
        "utterance": item.text,
        "scenario": item.get_scenario_display(),
        "intended_emotion": item.target_emotion,
        "emotion_variant": item.emotion_variant,
        "intended_intensity": item.target_intensity,
        "acoustic_cues": cues,
    }
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": json.dumps(details, ensure_ascii=False, indent=1)},
    ]


def parse_draft(reply: JudgeReply, strategies: Sequence[tuple[str, str]]) -> ParsedDraft:
    """Return the ToM document in a model's reply, or the reason it has none.

    Strategies may be given by id or by name (any case); unknown ones are an error, since a
    silently dropped strategy would make a draft look surer than the model was.
    """
    if not reply.ok or reply.data is None:
        return ParsedDraft(None, f"The draft model gave no usable answer: {reply.error}")
    data = reply.data
    by_name = {name.casefold(): slug for slug, name in strategies} | {slug: slug for slug, _ in strategies}
    tom: dict[str, Any] = {}
    for field in TOM_TEXT_FIELDS:
        value = data.get(field)
        tom[field] = value.strip() if isinstance(value, str) else ""
    problems = [f"missing {field}" for field in TOM_TEXT_FIELDS if not tom[field]]
    for field in ("recommended_strategies", "not_recommended_strategies"):
        values = _text_list(data.get(field))
        unknown = [value for value in values if value.strip().casefold() not in by_name]
        if unknown:
            problems.append(f"unknown {field.replace('_', ' ')}: {', '.join(unknown)}")
        tom[field] = list(dict.fromkeys(by_name[v.strip().casefold()] for v in values if v not in unknown))
    tom["constraints"] = [value.strip() for value in _text_list(data.get("constraints")) if value.strip()]
    problems += [problem.message for problem in check_tom(tom, strategy_slugs=set(by_name.values()))]
    if problems:
        return ParsedDraft(
            None, "The draft model's answer does not fit the ToM fields: " + "; ".join(problems)
        )
    return ParsedDraft(tom, "")


def _text_list(value: object) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [entry for entry in value if isinstance(entry, str)]
    return []


def start_draft_job(
    *, started_by: User | None, item_ids: Collection[int] | None = None, missing_only: bool = True
) -> Job:
    """Queue a draft job for the given items (default: recorded items without a usable draft)."""
    if not drafts_enabled():
        raise DraftsDisabled("Machine drafts are off: set ECHOSTUDIO_DRAFT_LLM_BASE_URL to an endpoint.")
    parameters: dict[str, Any] = {"missing_only": missing_only}
    if item_ids is not None:
        parameters["item_ids"] = sorted(item_ids)
    return start_job(JOB_KIND, started_by=started_by, parameters=parameters)


def items_to_draft(parameters: Mapping[str, Any]) -> list[Item]:
    """Return the items a draft job covers, with their recordings."""
    items = Item.objects.select_related("recording")
    if parameters.get("item_ids") is not None:
        items = items.filter(pk__in=parameters["item_ids"])
    else:
        items = items.waiting_for_labels()
    if parameters.get("missing_only", True):
        # A tier file's perception draft is no ToM draft: the item still needs one.
        drafted = MachineDraft.objects.filter(error="").exclude(prompt_version=TIER_FILE_DRAFT)
        items = items.exclude(pk__in=drafted.values("item_id"))
    return list(items.order_by("pk"))


def run_draft_job(job: Job, reporter: JobReporter) -> dict[str, Any]:
    """Draft every item of the job; store each answer as a MachineDraft (errors included)."""
    config = draft_config()
    if config is None:
        raise DraftsDisabled("Machine drafts are off: set ECHOSTUDIO_DRAFT_LLM_BASE_URL to an endpoint.")
    strategies = list(Strategy.objects.filter(active=True).values_list("slug", "name"))
    items = items_to_draft(job.parameters)
    reporter.progress(0.0, f"Drafting {len(items)} items with {config.model}", force=True)
    by_key: dict[Hashable, Item] = {item.pk: item for item in items}
    outcome = {"drafted": 0, "failed": 0}
    first_error = ""

    def store(request: JudgeRequest, reply: JudgeReply) -> None:
        nonlocal first_error
        item = by_key[request.key]
        parsed = parse_draft(reply, strategies)
        MachineDraft.objects.create(
            item=item,
            model_name=config.model,
            prompt_version=PROMPT_VERSION,
            tom=parsed.tom or {},
            raw_text=reply.raw_text[:100_000],
            error=parsed.error,
        )
        outcome["drafted" if parsed.tom is not None else "failed"] += 1
        if parsed.error:
            first_error = first_error or parsed.error
            reporter.log(f"{item.external_id}: {parsed.error}")
        done = outcome["drafted"] + outcome["failed"]
        reporter.progress(done / len(items), f"{done} of {len(items)} items drafted")

    requests = [JudgeRequest(key=item.pk, messages=draft_messages(item, strategies)) for item in items]
    with JudgeClient(config) as client:
        client.judge_many(requests, on_result=store)
    if items and outcome["drafted"] == 0:
        raise DraftsFailed(
            f"No item could be drafted ({outcome['failed']} failed). First error: {first_error}"
        )
    return outcome
