/**
 * The dashboard's one stylesheet and one script, served from `/dashboard/assets/`. They are
 * strings here so the same module serves them under Node and on Workers (no file system
 * there). Pages work without the script; it adds live updates, local times and copy buttons.
 */

export const STYLESHEET = `
:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1b1f24; --muted: #5b6470; --line: #d8dde3; --panel: #f5f7f9;
  --accent: #1d5fd1; --accent-fg: #ffffff; --ok: #176b2c; --bad: #b3261e; --warn: #8a5300;
  --info: #1d5fd1; --focus: #1d5fd1;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #121417; --fg: #e6e8eb; --muted: #a2abb6; --line: #30353c; --panel: #1b1e23;
    --accent: #7fb0ff; --accent-fg: #0b0d10; --ok: #6fd08a; --bad: #ff8a80; --warn: #f2c062;
    --info: #7fb0ff; --focus: #7fb0ff;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
a { color: var(--accent); }
:focus-visible { outline: 2px solid var(--focus); outline-offset: 2px; }
.skip { position: absolute; left: -999px; top: 0; padding: 6px 10px; background: var(--panel); }
.skip:focus { left: 8px; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
  white-space: nowrap; }
.top { display: flex; flex-wrap: wrap; gap: 8px 20px; align-items: center; padding: 8px 20px;
  border-bottom: 1px solid var(--line); background: var(--panel); }
.top nav { display: flex; gap: 4px; flex-wrap: wrap; }
.top nav a { padding: 4px 10px; border-radius: 6px; text-decoration: none; color: var(--fg); }
.top nav a[aria-current="page"] { background: var(--accent); color: var(--accent-fg); }
.brand { font-weight: 700; text-decoration: none; color: var(--fg); letter-spacing: .02em; }
.account { margin-left: auto; display: flex; gap: 12px; align-items: center; flex-wrap: wrap; }
.who { color: var(--muted); }
main { padding: 16px 20px 40px; max-width: 1400px; }
main.narrow { max-width: 520px; margin: 40px auto; }
/* A run's id has nowhere to break: on a phone, "Run run_…" made the whole page scroll sideways. */
h1 { font-size: 20px; margin: 4px 0 16px; overflow-wrap: anywhere; }
h2 { font-size: 16px; margin: 24px 0 8px; }
h3 { font-size: 14px; margin: 16px 0 6px; }
.field .hint { max-width: 360px; }
.muted { color: var(--muted); }
.num, time, code, .mono { font-variant-numeric: tabular-nums; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px; }
/* Positioned, so the screen-reader heading of a column of buttons (.sr-only, absolute) is placed
   within the table's scroll box: placed against the page, it made the whole page scroll sideways
   on a phone, by as far as the table was wider than the window. */
.table-wrap { overflow-x: auto; border: 1px solid var(--line); border-radius: 8px; position: relative; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { font-weight: 600; background: var(--panel); color: var(--muted); font-size: 12px;
  text-transform: uppercase; letter-spacing: .04em; }
tbody tr:last-child td { border-bottom: 0; }
td.wrap { white-space: normal; word-break: break-word; min-width: 240px; max-width: 480px; }
td.apps { white-space: normal; min-width: 140px; max-width: 320px; }
/* A name people chose (an account, a user, a token, a host, who made it): it wraps, within a word
   if it has no space, so a 64-character one leaves the table its page's width and its row's
   buttons on screen. The cells kept it on one line: the table scrolled sideways. */
td.name { white-space: normal; overflow-wrap: anywhere; min-width: 8rem; }
.name { white-space: normal; overflow-wrap: anywhere; }
td.name .mono { white-space: nowrap; } /* an id beside it stays whole */
/* An audit entry's metadata and request: one cell that wraps, anywhere in a long token. */
td.details { white-space: normal; overflow-wrap: anywhere; min-width: 22rem; }
tr:has(> td.details) > td { vertical-align: top; } /* a tall row reads from its top line */
td .button + .button { margin-left: 6px; }
.status { font-weight: 600; }
.status-success, .status-delivered, .status-active, .status-up { color: var(--ok); }
.status-failure, .status-failed, .status-revoked, .status-expired, .status-keyretired,
.status-down { color: var(--bad); }
.status-running, .status-pending, .status-queued, .status-draining, .status-drained { color: var(--warn); }
.status-cancelled, .status-stopped { color: var(--muted); }
.badge { display: inline-block; padding: 0 6px; border-radius: 4px; font-size: 12px; font-weight: 600;
  border: 1px solid var(--line); }
.badge-async { background: var(--accent); color: var(--accent-fg); border-color: var(--accent); }
.notice { padding: 8px 12px; border-radius: 6px; border: 1px solid var(--line); margin: 0 0 12px;
  background: var(--panel); }
.notice-error { border-color: var(--bad); }
.notice-warn { border-color: var(--warn); }
.filters, .stack { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; margin: 0 0 12px; }
.filters > button, .filters > .button { margin-top: 19px; }
.stack { flex-direction: column; align-items: stretch; }
/* A confirmation's button is as wide as its words: stretched, "Delete" was a red bar across the
   whole page at 1280 px, read as a banner rather than a button. */
.stack > button { align-self: flex-start; }
.field { display: flex; flex-direction: column; gap: 2px; min-width: 160px; }
.field label { font-size: 12px; color: var(--muted); font-weight: 600; }
.hint { color: var(--muted); font-size: 12px; }
input, select, textarea, button { font: inherit; color: inherit; }
select { max-width: 100%; }
.account select { max-width: min(16rem, 55vw); text-overflow: ellipsis; }
input, select, textarea { padding: 5px 8px; border: 1px solid var(--line); border-radius: 6px;
  background: var(--bg); }
.secret-value { -webkit-text-security: disc; font-family: ui-monospace, monospace; min-width: min(20rem, 80vw); }
button, .button { padding: 5px 12px; border-radius: 6px; border: 1px solid var(--accent);
  background: var(--accent); color: var(--accent-fg); cursor: pointer; text-decoration: none;
  display: inline-block; }
button.secondary, .button.secondary { background: transparent; color: var(--fg); border-color: var(--line); }
button.danger, .button.danger { background: var(--bad); border-color: var(--bad); color: var(--bg); }
form.inline { display: inline-flex; gap: 6px; align-items: center; margin: 0; }
form.inline label { color: var(--muted); }
.pager { display: flex; gap: 16px; margin: 12px 0; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); gap: 8px 16px;
  margin: 0 0 16px; }
.facts div { border-left: 3px solid var(--line); padding-left: 8px; }
.facts dt { font-size: 12px; color: var(--muted); }
.facts dd { margin: 0; }
.timeline { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: 8px; margin: 0 0 16px; }
.timeline li { border: 1px solid var(--line); border-radius: 6px; padding: 4px 10px; }
.timeline li.off { color: var(--muted); border-style: dashed; }
pre.logs { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 10px;
  overflow: auto; max-height: 480px; font-size: 12.5px; white-space: pre-wrap; word-break: break-word; }
.secret-once { border: 2px solid var(--warn); border-radius: 8px; padding: 12px; margin: 0 0 16px; }
.secret-once > h2 { margin-top: 0; }
.secret-once > code { display: block; word-break: break-all; white-space: pre-wrap; margin: 8px 0; }
.actions { display: flex; gap: 8px; flex-wrap: wrap; margin: 0 0 16px; }
.tabs { display: flex; gap: 4px; margin: 0 0 12px; border-bottom: 1px solid var(--line); }
.tabs a { padding: 4px 10px; text-decoration: none; color: var(--fg); border-bottom: 2px solid transparent; }
.tabs a[aria-current="page"] { border-bottom-color: var(--accent); font-weight: 600; }
`;

export const SCRIPT = `"use strict";
(function () {
  // Times: shown in the reader's own zone, with the zone's name.
  var format = new Intl.DateTimeFormat("en-US", {
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
    second: "2-digit", hourCycle: "h23", timeZoneName: "short"
  });
  function local(date) {
    var p = {};
    format.formatToParts(date).forEach(function (part) { p[part.type] = part.value; });
    return p.year + "-" + p.month + "-" + p.day + " " + p.hour + ":" + p.minute + ":" +
      p.second + " " + p.timeZoneName;
  }
  // A log line's time keeps its milliseconds (data-ms); one marked data-utc stays in UTC, as
  // the server wrote it (the audit log's, whose From and To fields are UTC).
  function localTimes(root) {
    root.querySelectorAll("time[datetime]:not([data-utc])").forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d.getTime())) return;
      var text = local(d);
      if (el.hasAttribute("data-ms")) {
        var ms = String(d.getMilliseconds()).padStart(3, "0");
        text = text.replace(/([0-9]{2}:[0-9]{2}:[0-9]{2})/, "$1." + ms);
      }
      el.textContent = text;
    });
  }

  // Copy buttons: data-copy names the element whose text is copied.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      button.textContent = "Copied";
    }, function () {
      button.textContent = "Copy failed: select the text";
    });
  });

  // Live parts: an element with data-refresh is fetched again every so many milliseconds
  // (the same address), while the tab is visible, and replaced by its new version; once the
  // new version is no longer live (a run that ended), the fetching stops. A page that no
  // longer has the element at all (what it waited for has come) is loaded again whole.
  document.querySelectorAll("[data-refresh]").forEach(function (el) {
    var every = Math.max(1000, Number(el.getAttribute("data-refresh")) || 3000);
    var busy = false;
    var last = el.innerHTML;
    var timer = setInterval(function () {
      if (busy || document.hidden || !el.id) return;
      busy = true;
      fetch(location.href, { credentials: "same-origin", cache: "no-store" })
        .then(function (res) { return res.ok || res.status === 404 ? res.text() : null; })
        .then(function (html) {
          if (!html) return;
          var fresh = new DOMParser().parseFromString(html, "text/html").getElementById(el.id);
          if (!fresh || !fresh.hasAttribute("data-refresh")) clearInterval(timer);
          if (!fresh) return location.reload();
          if (fresh.innerHTML !== last) {
            last = fresh.innerHTML;
            el.innerHTML = last;
            localTimes(el);
          }
        })
        .catch(function () {})
        .then(function () { busy = false; });
    }, every);
  });
  // A page that shows a secret once, as the answer to its form's POST: a reload asks for the
  // page again (GET) rather than sending the form again.
  if (document.querySelector("[data-shown-once]") && history.replaceState) {
    history.replaceState(null, "", location.href);
  }
  localTimes(document);
})();
`;
