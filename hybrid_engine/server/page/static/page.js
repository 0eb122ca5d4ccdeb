// The search page: one POST /search per submit, with highlights and each hit's place in
// every leg; facet values filter the next search when clicked. No build step, no CDN.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY_HEADER = "X-API-Key";

function headers() {
  const out = { "Content-Type": "application/json" };
  const key = $("apikey").value;
  if (key) out[KEY_HEADER] = key;
  return out;
}

function text(tag, content, className) {
  const node = document.createElement(tag);
  node.textContent = content;
  if (className) node.className = className;
  return node;
}

function request() {
  const body = {
    query: $("query").value,
    k: Number($("k").value) || 10,
    fusion: $("fusion").value,
    highlight: true,
    explain: true,
  };
  const filter = $("filter").value.trim();
  if (filter) body.filter = JSON.parse(filter);
  const facets = $("facets").value.split(",").map((f) => f.trim()).filter(Boolean);
  if (facets.length) body.facets = facets;
  if ($("rerank").checked) body.rerank = 30;
  return body;
}

function showHits(result) {
  const list = $("hits");
  list.replaceChildren();
  result.hits.forEach((hit) => {
    const item = document.createElement("li");
    item.dataset.id = hit.id;
    item.append(text("span", hit.title || hit.id, "title"));
    item.append(text("div", `${hit.id} · score ${hit.score.toFixed(4)}`, "meta"));
    const legs = Object.entries(hit.legs || {})
      .map(([leg, place]) => `${leg} #${place.rank} (${place.score.toFixed(3)})`)
      .join(" · ");
    item.append(text("div", legs, "legs"));
    const snippet = document.createElement("div");
    snippet.className = "snippet";
    snippet.innerHTML = hit.highlight || ""; // escaped by the server, <mark> only
    item.append(snippet);
    list.append(item);
  });
}

function showFacets(facets) {
  const aside = $("facet-counts");
  aside.replaceChildren();
  Object.entries(facets || {}).forEach(([field, counts]) => {
    aside.append(text("h3", field));
    counts.forEach(({ value, count }) => {
      const button = text("button", `${value} (${count})`);
      button.type = "button";
      button.dataset.field = field;
      button.dataset.value = JSON.stringify(value);
      button.addEventListener("click", () => narrow(field, value));
      aside.append(button);
    });
  });
}

function narrow(field, value) {
  const current = $("filter").value.trim();
  const filter = current ? JSON.parse(current) : {};
  filter[field] = value;
  $("filter").value = JSON.stringify(filter);
  search();
}

async function search() {
  $("error").textContent = "";
  let body;
  try {
    body = request();
  } catch (error) {
    $("error").textContent = `the filter is not JSON: ${error.message}`;
    return;
  }
  const response = await fetch("search", { method: "POST", headers: headers(), body: JSON.stringify(body) });
  const answer = await response.json();
  if (!response.ok) {
    const detail = answer.detail;
    $("error").textContent = typeof detail === "string" ? detail : JSON.stringify(detail);
    return;
  }
  const result = answer.results[0];
  showHits(result);
  showFacets(result.facets);
  $("timings").textContent = Object.entries(answer.timings_ms)
    .map(([stage, ms]) => `${stage} ${ms.toFixed(1)} ms`)
    .join(" · ");
  document.body.dataset.searches = String(Number(document.body.dataset.searches || 0) + 1);
}

async function status() {
  const response = await fetch("health");
  const health = await response.json();
  $("status").textContent = `${health.documents} documents · ${health.retrievers.join(" + ")}`;
}

$("search").addEventListener("submit", (event) => {
  event.preventDefault();
  search();
});
status();
