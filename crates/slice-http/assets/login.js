// The developer login form, in a browser: the callback answers JSON (spec section 5), so
// the form is sent from here and, once logged in, the browser goes back to the page
// that sent it to the login (`?next=`) when that is on this origin, and to the web view
// (the form's `data-home`) when it is not.
"use strict";

// Where `next` leads, resolved as the navigation itself will resolve it, if that is on
// this origin. Only the URL parser can tell: it drops tabs and newlines and reads `\` as
// `/`, so a text that looks like a path (`/\t/other.example`) can name another host.
function sameOrigin(next) {
  try {
    const target = new URL(next, location.origin);
    return target.origin === location.origin ? target.href : null;
  } catch {
    return null;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const form = document.querySelector("form");
  const next = new URLSearchParams(location.search).get("next");
  // Without `next` the form is sent as it is, and shows the callback's answer.
  if (!form || next === null) {
    return;
  }
  const destination = sameOrigin(next) ?? new URL(form.dataset.home, location.origin).href;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const response = await fetch(form.action, {
      method: "POST",
      body: new URLSearchParams(new FormData(form)),
      credentials: "same-origin",
    });
    if (response.ok) {
      location.assign(destination);
      return;
    }
    const answer = await response.json().catch(() => ({}));
    let message = document.getElementById("login-error");
    if (!message) {
      message = document.createElement("p");
      message.id = "login-error";
      message.setAttribute("role", "alert");
      form.after(message);
    }
    message.textContent = answer.error || `login failed (${response.status})`;
  });
});
