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

  // One table runs the keys and writes the page's list of them (EchoKeys.use, shortcuts.js).
  const SHORTCUTS = [
    { keys: "Space", hint: "Play or pause the reply (a focused radio or button: choose or press it)",
      on: (e) => e.key === " " && !EchoKeys.ownsSpace(e.target), run: (e) => { e.preventDefault(); toggle(reply, query); } },
    { keys: "Q", hint: "Play or pause the user's query", when: () => Boolean(query),
      on: (e) => e.key === "q" || e.key === "Q", run: () => toggle(query, reply) },
    { keys: "1 – 5", hint: "Score the highlighted question", on: (e) => /^[1-5]$/.test(e.key),
      run: (e) => {
        e.preventDefault();
        if (unlocked) score(e.key);
        else say(hint, "Play the whole reply first.");
      } },
    { keys: "↑ ↓", hint: "Move between questions", on: (e) => e.key === "ArrowDown" || e.key === "ArrowUp",
      run: (e) => { e.preventDefault(); activate(active + (e.key === "ArrowDown" ? 1 : -1)); } },
    { keys: "Enter", hint: "Submit", on: (e) => e.key === "Enter", run: (e) => { e.preventDefault(); submit(); } },
    { keys: "Esc", hint: "Leave whatever has focus, so the keys above work again", on: () => false, run: () => {} },
  ];

  // Esc leaves whatever has focus (EchoKeys.bind, static/js/shortcuts.js).
  EchoKeys.use(document.querySelector("[data-shortcut-list]"), SHORTCUTS,
    (event) => event.altKey || event.ctrlKey || event.metaKey || event.target.matches("textarea, input[type=text]"));
})();
