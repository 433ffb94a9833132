// The rating page of a listening study: playback gating, keyboard shortcuts, submission.
//
// The questions stay disabled until the reply has played to the end (the gate: playback_gate.js;
// the server refuses a rating for a sample whose playback it has not recorded).
(function () {
  "use strict";
  const root = document.getElementById("rating");
  if (!root) return;
  const form = document.getElementById("rating-form");
  const controls = document.getElementById("rating-controls");
  const reply = document.getElementById("response-audio");
  const query = document.getElementById("query-audio");
  const status = document.getElementById("playback-status");
  const hint = document.getElementById("form-hint");
  const questions = Array.from(root.querySelectorAll(".question"));
  let unlocked = root.dataset.unlocked === "true";
  let active = 0;
  let submitting = false;

  function say(element, text) {
    if (element) element.textContent = text;
  }

  function chosen(question) {
    return question.querySelector("input:checked");
  }

  function activate(index) {
    active = Math.max(0, Math.min(questions.length - 1, index));
    questions.forEach((question, i) => question.classList.toggle("active", i === active));
  }

  function firstUnanswered() {
    const index = questions.findIndex((question) => !chosen(question));
    return index === -1 ? questions.length - 1 : index;
  }

  function unlock() {
    unlocked = true;
    root.dataset.unlocked = "true";
    controls.disabled = false;
    say(status, "Played: the questions are open. Press 1–5 to score the highlighted question.");
    activate(firstUnanswered());
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

  function toggle(audio, other) {
    if (!audio) return;
    if (audio.paused) {
      if (other) other.pause();
      audio.play();
    } else {
      audio.pause();
    }
  }

  function score(value) {
    const input = questions[active].querySelector(`input[value="${value}"]`);
    input.checked = true;
    input.dispatchEvent(new Event("change", { bubbles: true }));
    EchoKeys.release();
    // The highlight stays: the hint says digits score and arrows move, so a digit that also
    // moved on made digit-then-down skip every other question.
    say(hint, "");
  }

  function submit() {
    if (submitting) return;
    if (!unlocked) {
      say(hint, "Play the whole reply first.");
      return;
    }
    if (!questions.every(chosen)) {
      activate(firstUnanswered());
      say(hint, "Score every question before submitting.");
      return;
    }
    submitting = true;
    form.submit();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });

  questions.forEach((question, index) => {
    question.addEventListener("change", () => activate(index));
  });

  // Esc leaves whatever has focus (EchoKeys.bind, static/js/shortcuts.js).
  EchoKeys.bind((event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.target.matches("textarea, input[type=text]")) return;
    if (event.key === " " && !EchoKeys.ownsSpace(event.target)) {
      event.preventDefault();
      toggle(reply, query);
    } else if (event.key === "q" || event.key === "Q") {
      toggle(query, reply);
    } else if (/^[1-5]$/.test(event.key)) {
      event.preventDefault();
      if (unlocked) score(event.key);
      else say(hint, "Play the whole reply first.");
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      activate(active + (event.key === "ArrowDown" ? 1 : -1));
    } else if (event.key === "Enter") {
      event.preventDefault();
      submit();
    }
  });
})();
