// The rating page of a listening study: playback gating, keyboard shortcuts, submission.
//
// The questions stay disabled until the reply has played to the end (the gate: playback_gate.js;
// the server refuses a rating for a sample whose playback it has not recorded). The keys are the
// rating pages' one table (EchoRatingKeys, rating_keys.js).
(function () {
  "use strict";
  const root = document.getElementById("rating");
  if (!root) return;
  const form = document.getElementById("rating-form");
  const controls = document.getElementById("rating-controls");
  const reply = document.getElementById("response-audio");
  const status = document.getElementById("playback-status");
  const hint = document.getElementById("form-hint");
  let unlocked = root.dataset.unlocked === "true";
  let submitting = false;

  function say(element, text) {
    if (element) element.textContent = text;
  }

  function submit() {
    if (submitting) return;
    if (!unlocked) {
      say(hint, "Play the whole reply first.");
      return;
    }
    if (!questions.answered()) {
      questions.activate(questions.firstUnanswered());
      say(hint, "Score every question before submitting.");
      return;
    }
    submitting = true;
    form.submit();
  }

  const questions = EchoRatingKeys.bind({
    list: document.querySelector("[data-shortcut-list]"),
    questions: Array.from(root.querySelectorAll(".question")),
    reply: reply,
    query: document.getElementById("query-audio"),
    isUnlocked: () => unlocked,
    submit: submit,
    say: (text) => say(hint, text),
  });

  function unlock() {
    unlocked = true;
    root.dataset.unlocked = "true";
    controls.disabled = false;
    say(status, "Played: the questions are open. Press 1–5 to score the highlighted question.");
    questions.activate(questions.firstUnanswered());
  }

  if (reply) {
    EchoPlaybackGate.gate(EchoPlaybackGate.audioSource(reply), {
      isUnlocked: () => unlocked,
      playedUrl: root.dataset.playedUrl,
      onUnlocked: unlock,
      onRefused: (message) => say(status, message),
      refusedText: "The playback could not be recorded; play the reply again.",
    });
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
})();
