// The windlass hub's only script. It enhances server-rendered pages and never builds HTML
// from catalog text: fragments it swaps in are rendered and escaped by the server, and
// messages are set with textContent.
(function () {
  "use strict";
  var tokenMeta = document.querySelector('meta[name="csrf-token"]');
  var csrf = tokenMeta ? tokenMeta.getAttribute("content") : "";

  // Search as you type: the server renders the result cards, the script swaps them in.
  var search = document.getElementById("search");
  var results = document.getElementById("results");
  if (search && results) {
    var timer = null;
    var latest = 0;
    var update = function () {
      var params = new URLSearchParams(new FormData(search));
      params.forEach(function (value, key) { if (!value) { params.delete(key); } });
      var url = "/?" + params.toString();
      var mine = ++latest;
      fetch(url + (params.toString() ? "&" : "") + "fragment=results", { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html !== null && mine === latest) {
            results.innerHTML = html;
            history.replaceState(null, "", url);
          }
        });
    };
    search.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(update, 150);
    });
    search.addEventListener("change", update);
  }

  // State changes: posted with the CSRF token in a header; the answer is shown in place.
  var show = function (element, ok, message, link) {
    if (!element) { return; }
    element.textContent = message;
    element.className = "message " + (ok ? "ok" : "error");
    if (link) {
      var a = document.createElement("a");
      a.href = link;
      a.textContent = " Watch it in the installed view";
      element.appendChild(a);
    }
  };
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-action]")) { return; }
    event.preventDefault();
    var out = document.getElementById(form.getAttribute("data-result") || (form.id + "-result"));
    var button = form.querySelector("button");
    if (button) { button.disabled = true; }
    fetch(form.getAttribute("action"), {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        "Accept": "application/json",
        "X-CSRF-Token": csrf
      },
      body: new URLSearchParams(new FormData(form)).toString()
    })
      .then(function (r) {
        return r.json().catch(function () { return { message: "HTTP " + r.status }; })
          .then(function (body) { show(out, r.ok, body.message || ("HTTP " + r.status), r.ok ? body.location : null); });
      })
      .catch(function (error) { show(out, false, "The hub did not answer: " + error); })
      .then(function () {
        if (button) { button.disabled = false; }
        refresh();
      });
  });

  // The installed view: fetched again every two seconds, so progress shows without a reload.
  var live = document.querySelector("[data-refresh]");
  var refresh = function () {
    if (!live) { return; }
    fetch(live.getAttribute("data-refresh"), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html !== null) { live.innerHTML = html; } })
      .catch(function () { /* the next poll tries again */ });
  };
  if (live) { setInterval(refresh, 2000); }
})();
