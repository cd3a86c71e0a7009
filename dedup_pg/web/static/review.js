// dedup-pg review page: keyboard first. No framework, no build step: every
// action is a plain link or form (the page works without this file); this adds
// the keys, the queue's selection and the moved paragraphs' pairing.
(function () {
  "use strict";
  var page = document.body.dataset.page;
  var help = document.getElementById("help");
  var hint = document.getElementById("hint");
  var timer = null;

  function say(text) {
    hint.textContent = text; // text, never HTML
    hint.hidden = false;
    clearTimeout(timer);
    timer = setTimeout(function () { hint.hidden = true; }, 5000);
  }
  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }
  function follow(id) {
    var a = document.getElementById(id);
    if (a && a.href) { window.location.href = a.href; return true; }
    return false;
  }
  function toggleHelp(show) { help.hidden = show === undefined ? !help.hidden : !show; }

  var helpButton = document.getElementById("help-button");
  if (helpButton) helpButton.addEventListener("click", function () { toggleHelp(); });

  // one submission per form: a second key press while the first is on its way
  // would only be told "already decided"
  var forms = Array.prototype.slice.call(document.querySelectorAll("form"));
  forms.forEach(function (f) {
    f.addEventListener("submit", function (e) {
      if (f.dataset.sent) { e.preventDefault(); return; }
      f.dataset.sent = "1";
    });
  });
  window.addEventListener("pageshow", function () {
    forms.forEach(function (f) { delete f.dataset.sent; });
  });

  // the queue: a selected row, moved with j/k, opened with Enter
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr.row"));
  var selected = -1;
  function select(i) {
    if (!rows.length) return;
    selected = Math.max(0, Math.min(rows.length - 1, i));
    rows.forEach(function (r, k) { r.classList.toggle("selected", k === selected); });
    rows[selected].scrollIntoView({ block: "nearest" });
  }
  rows.forEach(function (r, k) {
    r.addEventListener("click", function (e) {
      if (e.target.closest("a")) return;
      window.location.href = r.dataset.href;
    });
  });
  if (page === "queue" && rows.length) select(0);

  // a moved paragraph and its partner light up together
  Array.prototype.slice.call(document.querySelectorAll(".moved-tag")).forEach(function (tag) {
    var own = tag.closest(".para");
    var partner = document.getElementById(tag.dataset.partner);
    function on() { own.classList.add("paired"); if (partner) partner.classList.add("paired"); }
    function off() { own.classList.remove("paired"); if (partner) partner.classList.remove("paired"); }
    own.addEventListener("mouseenter", on);
    own.addEventListener("mouseleave", off);
  });

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (typing(e.target)) {
      if (e.key === "Escape") e.target.blur();
      return;
    }
    var k = e.key;
    if (k === "?") { toggleHelp(); e.preventDefault(); return; }
    if (k === "Escape") { toggleHelp(false); return; }
    if (k === "u") {
      var undo = document.getElementById("undo-form");
      if (undo) { e.preventDefault(); undo.requestSubmit(); }
      return;
    }
    if (page === "queue") {
      if (k === "j" || k === "n") {
        if (selected >= rows.length - 1) { if (!follow("page-next")) say("The end of the queue."); }
        else select(selected + 1);
      } else if (k === "k" || k === "p") {
        if (selected <= 0) { if (!follow("page-prev")) say("The top of the queue."); }
        else select(selected - 1);
      } else if ((k === "Enter" || k === "o") && selected >= 0) {
        window.location.href = rows[selected].dataset.href;
      } else if (k === "/") {
        var source = document.getElementById("filter-source");
        if (source) { e.preventDefault(); source.focus(); }
      } else return;
      e.preventDefault();
      return;
    }
    if (page === "candidate") {
      if (k === "j" || k === "n") { if (!follow("next")) say("This is the last candidate of the queue."); }
      else if (k === "k" || k === "p") { if (!follow("prev")) say("This is the first candidate of the queue."); }
      else if (k === "q") { follow("to-queue"); }
      else if (k === "e") { document.getElementById("note").focus(); }
      else if (k === "r" || k === "c" || k === "d") {
        var button = document.querySelector('button[data-key="' + k + '"]');
        if (!button) return;
        if (button.disabled) { say(button.title); }
        else { button.click(); }
      } else return;
      e.preventDefault();
    }
  });
})();
