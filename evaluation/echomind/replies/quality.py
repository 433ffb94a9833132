"""Response-audio quality of EchoMind replies: DNSMOS P.808 (`annotation.audio.speech.quality`, the
studio's one MOS estimate of speech audio) of every reply with audio, stored among the reply's
scores as "dnsmos" and averaged per system on the EchoMind leaderboard.

It runs as a job on a worker (`QUALITY_JOB`), never in the web process: the ONNX models take
seconds to load and a second or so per reply. A reply whose audio is under DNSMOS's shortest clip
stays "not computed", and is counted.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

# The module loads its ONNX models on first use, so the web process may import it for MIN_SECONDS.
from annotation.audio.speech.quality import MIN_SECONDS, dnsmos_scores
from annotation.audio.upload import AudioRejected, UploadLimits, normalise_upload
from evaluation.echomind.models import Reply
from webapp.jobs import JobReporter
from webapp.storage import read_media

QUALITY_JOB = "echomind_reply_quality"
QUALITY_KEY = "dnsmos"
# Reply audio is measured as it is: the rules a take must meet (length, silence, clipping) refuse
# nothing here, and DNSMOS itself leaves a clip under a second unmeasured.
AS_IT_IS = UploadLimits(
    min_seconds=0.0, max_seconds=600.0, silence_peak_dbfs=-math.inf, max_clipping_ratio=1.0
)


@dataclass(frozen=True)
class QualityReport:
    measured: int = 0
    too_short: int = 0
    unreadable: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def replies_to_measure() -> list[int]:
    """Return the ids of the replies with audio long enough and no DNSMOS yet, oldest first."""
    unmeasured = (
        Reply.objects.in_use()
        .exclude(audio_key="")
        .exclude(scores__has_key=QUALITY_KEY)
        .exclude(audio_seconds__lt=MIN_SECONDS)  # an unknown length is tried
    )
    return list(unmeasured.order_by("pk").values_list("pk", flat=True))


def measure_reply_audio(reporter: JobReporter) -> QualityReport:
    """Store DNSMOS P.808 of every reply with audio that has none; idempotent (a rerun after a worker
    died goes on where it stopped)."""
    pending = replies_to_measure()
    measured = unreadable = 0
    too_short = Reply.objects.in_use().exclude(audio_key="").filter(audio_seconds__lt=MIN_SECONDS).count()
    reporter.progress(0.0, f"{len(pending)} replies to measure", force=True)
    for done, reply_id in enumerate(pending, start=1):
        reply = Reply.objects.filter(pk=reply_id).only("audio_key").first()
        if reply is not None:
            try:
                samples = normalise_upload(
                    read_media(reply.audio_key), "reply audio", limits=AS_IT_IS
                ).samples
            except (AudioRejected, OSError):
                unreadable += 1
            else:
                quality = dnsmos_scores(samples)
                if quality is None:
                    too_short += 1
                else:
                    measured += Reply.objects.add_scores(reply_id, {QUALITY_KEY: quality.p808})
        reporter.progress(done / len(pending), f"Measured {done} of {len(pending)} replies")
    report = QualityReport(measured, too_short, unreadable)
    reporter.log(
        f"DNSMOS P.808 of {measured} replies; {too_short} too short to measure, {unreadable} unreadable"
    )
    return report
