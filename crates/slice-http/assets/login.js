// The developer login form, in a browser: the callback answers JSON (spec section 5), so
// the form is sent from here and, once logged in, the browser goes back to the page
// that sent it to the login (`?next=`), when that is a path of this site.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const form = document.querySelector("form");
  const next = new URLSearchParams(location.search).get("next");
  const sameSite = next !== null && /^\/(?![\/\\])/.test(next);
  if (!form || !sameSite) {
    return;
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const response = await fetch(form.action, {
      method: "POST",
      body: new URLSearchParams(new FormData(form)),
      credentials: "same-origin",
    });
    if (response.ok) {
      location.assign(next);
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
