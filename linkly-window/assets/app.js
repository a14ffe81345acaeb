// Linkly's window: the one script. Every page works without it; it adds the live progress,
// the offline banner, keyboard navigation, the editor's toolbar, copy buttons and confirmations.
(function () {
  "use strict";
  var $ = function (s, r) { return (r || document).querySelector(s); };
  var $$ = function (s, r) { return Array.prototype.slice.call((r || document).querySelectorAll(s)); };

  // Live status: polls /api/status (every second while a sync runs), and says when the server
  // is gone (then retries).
  var offline = $("#offline");
  var busy = false;
  function setText(key, value) {
    $$('[data-live="' + key + '"]').forEach(function (el) { if (value != null) el.textContent = value; });
  }
  function poll() {
    fetch("/api/status", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { if (!r.ok) throw new Error(r.status); return r.json(); })
      .then(function (s) {
        if (offline) offline.hidden = true;
        busy = !!s.busy;
        setText("documents", s.documents_text);
        setText("indexed", s.indexed_text);
        setText("skipped", s.skipped_text);
        setText("waiting", s.waiting_text);
        $$('[data-live="state"]').forEach(function (el) { el.textContent = s.state_text; el.setAttribute("data-state", s.state); });
        var p = $("#progress");
        if (p) {
          p.hidden = !s.phase;
          setText("progress-text", s.progress_text || "");
          var fill = $('[data-live="progress-fill"]');
          if (fill) fill.style.width = (s.total > 0 ? Math.min(100, Math.round(100 * s.done / s.total)) : 5) + "%";
        }
      })
      .catch(function () { if (offline) offline.hidden = false; busy = false; })
      .then(function () { setTimeout(poll, busy || (offline && !offline.hidden) ? 1000 : 5000); });
  }
  setTimeout(poll, $("#progress") ? 300 : 2000);

  // The language switch applies on change.
  var langSelect = $("#lang-select");
  if (langSelect) {
    var apply = $("#lang-apply");
    if (apply) apply.hidden = true;
    langSelect.addEventListener("change", function () { langSelect.form.submit(); });
  }

  // Forms that ask first.
  $$("form[data-confirm]").forEach(function (f) {
    f.addEventListener("submit", function (e) { if (!window.confirm(f.getAttribute("data-confirm"))) e.preventDefault(); });
  });

  // Keyboard: "/" focuses the page's search box; arrows move through results; Enter opens.
  var box = $("#q") || $("#find") || $("#notes-q");
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    var typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
    if (e.key === "/" && !typing && box) { e.preventDefault(); box.focus(); box.select(); return; }
    var links = $$('[data-testid="result-link"]');
    if (!links.length || (typing && t !== box)) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      var i = links.indexOf(document.activeElement);
      i = e.key === "ArrowDown" ? Math.min(links.length - 1, i + 1) : Math.max(0, i - 1);
      e.preventDefault();
      links[i].focus();
      $$(".result.selected").forEach(function (r) { r.classList.remove("selected"); });
      links[i].closest(".result").classList.add("selected");
    }
  });

  // Document: highlight #L120-124 and scroll it into view; the current find match too.
  function highlightHash() {
    $$(".line.hl").forEach(function (l) { l.classList.remove("hl"); });
    var m = /^#L(\d+)(?:-(\d+))?$/.exec(window.location.hash);
    if (!m) return;
    var a = parseInt(m[1], 10), b = m[2] ? parseInt(m[2], 10) : a;
    for (var n = a; n <= b && n < a + 2000; n++) {
      var el = document.getElementById("L" + n);
      if (el) el.classList.add("hl");
    }
    var first = document.getElementById("L" + a);
    if (first) first.scrollIntoView({ block: "center" });
  }
  if ($("#doc-lines")) {
    window.addEventListener("hashchange", highlightHash);
    if (window.location.hash) highlightHash();
    else { var cur = $(".line.cur"); if (cur) cur.scrollIntoView({ block: "center" }); }
    var find = $("#find");
    if (find) find.addEventListener("keydown", function (e) {
      if (e.key !== "Enter") return;
      var next = $(e.shiftKey ? "#find-prev" : "#find-next");
      if (next && find.value === find.defaultValue) { e.preventDefault(); next.click(); }
    });
  }

  // The note editor's toolbar: exactly what note_save accepts.
  var toolbar = $("#note-toolbar"), body = $("#note-body");
  if (toolbar && body) {
    toolbar.hidden = false;
    toolbar.addEventListener("click", function (e) {
      var b = e.target.closest("button[data-md]");
      if (!b) return;
      var s = body.selectionStart, end = body.selectionEnd, v = body.value, sel = v.slice(s, end);
      var kind = b.getAttribute("data-md"), out;
      if (kind === "bold") out = "**" + (sel || "text") + "**";
      else if (kind === "strike") out = "~~" + (sel || "text") + "~~";
      else if (kind === "br") out = sel + "\\\n";
      else {
        var lines = (sel || "").split("\n");
        out = lines.map(function (l, i) { return (kind === "ul" ? "- " : (i + 1) + ". ") + l; }).join("\n");
        if (s > 0 && v[s - 1] !== "\n") out = "\n" + out;
      }
      body.setRangeText(out, s, end, "end");
      body.focus();
    });
  }

  // Cancel in the delete confirmation closes it.
  var cancel = $("#note-delete-cancel");
  if (cancel) cancel.addEventListener("click", function (e) { e.preventDefault(); $("#delete-confirm").open = false; });

  // Copy buttons.
  $$("button[data-copy]").forEach(function (b) {
    b.addEventListener("click", function () {
      var el = document.getElementById(b.getAttribute("data-copy"));
      if (!el) return;
      var details = el.closest("details");
      if (details) details.open = true;
      var text = el.textContent;
      var done = function () { b.classList.add("done"); b.setAttribute("data-copied", "1"); setTimeout(function () { b.classList.remove("done"); }, 1500); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(done, function () { fallback(el); done(); });
      } else { fallback(el); done(); }
    });
  });
  function fallback(el) {
    var r = document.createRange(); r.selectNodeContents(el);
    var s = window.getSelection(); s.removeAllRanges(); s.addRange(r);
    try { document.execCommand("copy"); } catch (e) { /* selected for the person to copy */ }
  }
})();
