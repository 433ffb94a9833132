// The rating page of a dialogue study: playback gating per assistant turn, the keys of the turn
// being rated, and the compact turns' "show the whole turn" buttons.
//
// Each turn's questions stay disabled until that turn's reply has played to the end (the gate:
// playback_gate.js; the server also checks that the earlier replies were heard first and refuses a
// turn's rating until it has recorded the playback). One recording plays at a time. The keys are
// the rating pages' one table (EchoRatingKeys, rating_keys.js), on the turn being rated.
(function () {
  "use strict";
  const root = document.getElementById("dialogue-rating");
  if (!root) return;
  const audios = Array.from(root.querySelectorAll("audio"));

  audios.forEach((audio) => {
    audio.addEventListener("play", () => {
      audios.forEach((other) => {
        if (other !== audio) other.pause();
      });
    });
  });

  // Compact turns show a line of each speaker's text; where a line cuts a text short, the turn's
  // button shows the full text and back. Whether a line cuts depends on the width, so it is
  // measured again whenever the turn's width changes (a narrowed or zoomed window).
  root.querySelectorAll(".dialogue-turn.compact").forEach((section) => {
    const more = section.querySelector(".turn-more");
    if (!more) return;
    section.dataset.collapsed = "true";
    const texts = Array.from(section.querySelectorAll(".script-text"));
    const measure = () => {
      if (section.dataset.collapsed !== "true") return; // open: the button closes it again
      more.hidden = !texts.some((text) => text.scrollHeight > text.clientHeight + 1);
    };
    measure();
    if (window.ResizeObserver) new ResizeObserver(measure).observe(section);
    more.addEventListener("click", () => {
      const expand = section.dataset.collapsed === "true";
      section.dataset.collapsed = expand ? "false" : "true";
      more.setAttribute("aria-expanded", String(expand));
      more.textContent = expand ? "Show less" : "Show the full text";
    });
  });

  // The turn being rated (the first not yet saved): its questions take the keys.
  const current = root.querySelector(".dialogue-turn.current");
  const form = current && current.querySelector(".turn-form");
  const hint = current && current.querySelector(".form-hint");
  let submitting = false;

  function sayHint(text) {
    if (hint) hint.textContent = text;
  }

  function submitTurn() {
    if (submitting || !form) return;
    if (current.dataset.unlocked !== "true") {
      sayHint("Play the whole reply first.");
      return;
    }
    if (!questions.answered()) {
      questions.activate(questions.firstUnanswered());
      sayHint("Score every question before saving the turn.");
      return;
    }
    submitting = true;
    form.submit();
  }

  const questions = EchoRatingKeys.bind({
    list: root.querySelector("[data-shortcut-list]"),
    questions: form ? Array.from(form.querySelectorAll(".question")) : [],
    reply: current && current.querySelector(".reply-audio"),
    query: current && current.querySelector(".user-audio"),
    isUnlocked: () => Boolean(current) && current.dataset.unlocked === "true",
    submit: submitTurn,
    submitHint: "Save this turn",
    say: sayHint,
  });

  if (form) {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      submitTurn();
    });
  }

  root.querySelectorAll(".dialogue-turn").forEach((section) => {
    const reply = section.querySelector(".reply-audio");
    const status = section.querySelector(".playback-status");
    const controls = section.querySelector(".turn-controls");
    if (!reply) return;

    function unlocked() {
      return section.dataset.unlocked === "true";
    }

    function say(text) {
      if (status) status.textContent = text;
    }

    EchoPlaybackGate.gate(EchoPlaybackGate.audioSource(reply), {
      isUnlocked: unlocked,
      playedUrl: section.dataset.playedUrl,
      onUnlocked: () => {
        section.dataset.unlocked = "true";
        if (controls) controls.disabled = false;
        if (section === current) questions.activate(questions.firstUnanswered());
        say(
          section.dataset.later === "true"
            ? `Played: its questions open once turn ${Number(section.dataset.turn) - 1} is rated.`
            : section === current
              ? "Played: this turn's questions are open. Press 1–5 to score the highlighted question."
              : "Played: this turn's questions are open."
        );
      },
      onRefused: say,
      refusedText: "The playback could not be recorded; play the reply again.",
    });

    // Replies are heard in order (the server's rule): say so as soon as a later one is started,
    // not only after it has played to the end for nothing.
    reply.addEventListener("play", () => {
      if (unlocked()) return;
      const sections = Array.from(root.querySelectorAll(".dialogue-turn"));
      const waiting = sections.slice(0, sections.indexOf(section)).filter(
        (earlier) => earlier.querySelector(".reply-audio") && earlier.dataset.unlocked !== "true"
      );
      if (waiting.length) {
        const turns = waiting.map((earlier) => earlier.dataset.turn).join(", ");
        const replies = waiting.length > 1 ? `replies of turns ${turns}` : `reply of turn ${turns}`;
        say(`Play the ${replies} first: replies are heard in order, so this turn's questions open after ${waiting.length > 1 ? "those" : "it"}.`);
      }
    });
  });
})();
