"""Job results, parameters and metadata become labelled facts and links, failures one sentence."""

from __future__ import annotations

from webapp.lib.readable import Fact, facts, failure_sentence, format_value


def test_a_judge_runs_counts_read_as_labelled_figures() -> None:
    shown = facts({"to_judge": 12, "valid": 10, "judge_errors": 2, "already_judged": 0, "cached": 1234})

    assert shown == [
        Fact("Stages to judge", "12"),
        Fact("Valid judgements", "10"),
        Fact("Judge errors (excluded from results)", "2"),
        Fact("Already judged by another attempt", "0"),
        Fact("Answers from the cache", "1,234"),
    ]


def test_an_inference_result_links_the_system_it_produced_by_name() -> None:
    shown = facts({"system": 3, "system_name": "EchoChat sft-1", "outputs": 9, "checkpoint": None})

    assert shown[0] == Fact("System", "EchoChat sft-1", "evaluation:system_edit", 3)
    assert Fact("Outputs stored", "9") in shown
    assert Fact("Checkpoint", "—") in shown
    assert all(fact.label != "System name" for fact in shown)


def test_a_training_result_links_its_checkpoint_and_names_final_metrics() -> None:
    shown = facts(
        {"checkpoint": 7, "checkpoint_name": "sft-job12", "uri": "/ckpt/sft", "metrics": {"loss": 0.123456}}
    )

    assert shown[0] == Fact("Checkpoint", "sft-job12", "ml:checkpoint", 7)
    assert Fact("Final loss", "0.1235") in shown


def test_nested_settings_are_flattened_with_their_acronyms_kept() -> None:
    shown = facts(
        {
            "start_from": "checkpoint:4",
            "config": {"learning_rate": 1e-4, "lora": {"rank": 8}, "aaa_layers": None},
        }
    )

    assert shown[0] == Fact("Started from", "checkpoint #4", "ml:checkpoint", 4)
    assert Fact("Training learning rate", "0.0001") in shown
    assert Fact("Training LoRA rank", "8") in shown
    assert Fact("Training AAA layers", "—") in shown


def test_values_are_written_as_people_write_them() -> None:
    assert [format_value(value) for value in (True, False, [], ["train", "dev"], 2.5e6, None)] == [
        "yes",
        "no",
        "none",
        "train, dev",
        "2,500,000",
        "—",
    ]
    assert facts(None) == [] and facts({}) == []


def test_a_failure_is_one_sentence_with_what_to_do_next() -> None:
    sentence = failure_sentence("EmptyDataset: No item of the train split(s) is ready for SFT.")

    assert sentence == (
        "This job failed: No item of the train split(s) is ready for SFT; the log below has the details; "
        "fix the cause, then start the job again."
    )
    lost = failure_sentence("The worker running this job stopped responding (attempt 2 of 2).")
    assert "check that a worker is running" in lost
    assert failure_sentence("").startswith("This job failed: no reason was recorded")
