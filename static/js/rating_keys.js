// The keys of a listening study's rating pages, one table for a sample (rating.js) and for the turn
// being rated in a conversation (dialogue_rating.js), so both pages list and run the same keys:
// Space plays or pauses the reply, Q the user's query, 1-5 score the highlighted question (which
// stays highlighted), the arrows move the highlight, Enter submits, Esc leaves whatever has focus.
// Space is the reply's even on the sample's two players: a focused query player answering Space
// itself played the query instead of the sample being rated (issue 44); Q plays the query. Any
// other player (a conversation's earlier turns) keeps its own Space, the only key that plays it.
// The page opens with the reply's player focused, so Tab goes on from the sample to its questions.
// The table runs the keys and writes the page's list of them (EchoKeys.use, shortcuts.js).
(function () {
  "use strict";


  function toggle(audio, other) {
    if (!audio) return;
    if (audio.paused) {
      if (other) other.pause();
      audio.play();
    } else {
      audio.pause();
    }
  }

  /* options: list (the hint list node), questions (the .question elements scored), reply and query
   * (<audio>, query may be null), isUnlocked(), submit() (the page's own: it checks and sends) and
   * submitHint (what Enter does, listed), say(text) (the page's hint line). Returns the questions' cursor: activate(index) highlights
   * one, firstUnanswered() finds where to go, answered() says whether every question has a score. */
  function bind(options) {
    const questions = options.questions;
    let active = 0;
    // The sample's players, which the keys name: their own controls would take Space (and press
    // their button on keyup), so the reply's key is run instead.
    const isPlayer = (target) => Boolean(target) && (target === options.reply || target === options.query);

    const chosen = (question) => question.querySelector("input:checked");

    function activate(index) {
      if (!questions.length) return;
      active = Math.max(0, Math.min(questions.length - 1, index));
      questions.forEach((question, i) => question.classList.toggle("active", i === active));
    }

    function firstUnanswered() {
      const index = questions.findIndex((question) => !chosen(question));
      return index === -1 ? questions.length - 1 : index;
    }

    function score(value) {
      const input = questions[active].querySelector(`input[value="${value}"]`);
      if (!input) return;
      input.checked = true;
      input.dispatchEvent(new Event("change", { bubbles: true }));
      EchoKeys.release(); // a focused radio here would take the next arrow as a score
      // The highlight stays: the hint says digits score and arrows move, so a digit that also
      // moved on made digit-then-down skip every other question.
      options.say("");
    }

    questions.forEach((question, index) => {
      question.addEventListener("change", () => activate(index));
    });

    const asked = () => questions.length > 0;
    const SHORTCUTS = [
      { keys: "Space", hint: "Play / pause the reply, from the query's player too (a focused button or other player: press it)",
        when: () => Boolean(options.reply),
        on: (e) => e.key === " " && Boolean(options.reply) && (isPlayer(e.target) || !EchoKeys.ownsSpace(e.target)),
        run: (e) => { e.preventDefault(); toggle(options.reply, options.query); } },
      { keys: "Q", hint: "Play / pause the user's query", when: () => Boolean(options.query),
        on: (e) => (e.key === "q" || e.key === "Q") && Boolean(options.query), run: () => toggle(options.query, options.reply) },
      { keys: "1 – 5", hint: "Score the highlighted question", when: asked, on: (e) => asked() && /^[1-5]$/.test(e.key),
        run: (e) => {
          e.preventDefault();
          if (options.isUnlocked()) score(e.key);
          else options.say("Play the whole reply first.");
        } },
      { keys: "↑ ↓", hint: "Move between questions", when: asked,
        on: (e) => asked() && (e.key === "ArrowDown" || e.key === "ArrowUp"),
        run: (e) => { e.preventDefault(); activate(active + (e.key === "ArrowDown" ? 1 : -1)); } },
      // A focused button, link or summary keeps its own Enter (press, follow, open).
      { keys: "Enter", hint: options.submitHint || "Submit", when: asked,
        on: (e) => asked() && e.key === "Enter" && !e.target.matches("button, a[href], summary"),
        run: (e) => { e.preventDefault(); options.submit(); } },
      { keys: "Esc", hint: "Leave whatever has focus", on: () => false, run: () => {} },
    ];

    // Esc leaves whatever has focus (EchoKeys.bind); no key is taken while typing in a text box.
    EchoKeys.use(options.list, SHORTCUTS,
      (event) => event.altKey || event.ctrlKey || event.metaKey || EchoKeys.typing(event.target));
    // The keydown above ran Space on the reply; the focused player must not also act on its keyup.
    ["keyup", "keypress"].forEach((type) => document.addEventListener(type, (event) => {
      if (event.key === " " && options.reply && isPlayer(event.target)) event.preventDefault();
    }, true));
    const focused = document.activeElement;
    if (options.reply && (!focused || focused === document.body)) options.reply.focus({ preventScroll: true });

    return { activate: activate, firstUnanswered: firstUnanswered, answered: () => questions.every(chosen) };
  }

  window.EchoRatingKeys = { bind: bind };
})();
