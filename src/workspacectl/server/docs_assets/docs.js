// The /docs reference: reads /v1/openapi.json and renders it with DOM nodes and textContent only
// (no innerHTML, so no text from the document is ever parsed as markup). No outside assets.
"use strict";
(function () {
  const $ = (tag, attrs, ...kids) => {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") el.textContent = v; else el.setAttribute(k, v);
    }
    for (const kid of kids) if (kid) el.append(kid);
    return el;
  };
  const json = (v) => JSON.stringify(v, null, 2);

  function resolve(spec, schema, depth) {
    if (!schema || depth > 6) return schema;
    if (schema.$ref) return resolve(spec, spec.components.schemas[schema.$ref.split("/").pop()], depth + 1);
    return schema;
  }

  function operation(spec, method, path, op) {
    const id = op.operationId;
    const det = $("details", {id: "op-" + id, "data-search": (method + " " + path + " " + op.summary + " " + op.tags.join(" ")).toLowerCase()});
    det.append($("summary", {}, $("span", {class: "m " + method.toUpperCase(), text: method.toUpperCase()}),
      $("span", {class: "p", text: path}), $("span", {class: "s", text: op.summary})));
    const body = $("div", {class: "body"});
    if (op.description) body.append($("p", {text: op.description}));
    if (op["x-wsctl-scope"]) body.append($("p", {class: "scope", text: "Scope: " + op["x-wsctl-scope"]}));
    const inputs = {};
    if (op.parameters && op.parameters.length) {
      body.append($("h4", {text: "Parameters"}));
      for (const p of op.parameters) {
        const fid = id + "-" + p.in + "-" + p.name;
        body.append($("label", {for: fid, text: p.name + " (" + p.in + (p.required ? ", required" : "") + ")" +
          (p.description ? ": " + p.description : "")}));
        inputs[p.in + ":" + p.name] = body.appendChild($("input", {id: fid, type: "text"}));
      }
    }
    let bodyInput = null;
    if (op.requestBody) {
      const content = op.requestBody.content || {};
      const schema = content["application/json"] && content["application/json"].schema;
      body.append($("h4", {text: "Request body (JSON)"}), $("pre", {text: json(resolve(spec, schema, 0))}));
      bodyInput = body.appendChild($("textarea", {rows: "4", "aria-label": "Request body", placeholder: "{ }"}));
    }
    body.append($("h4", {text: "Responses"}));
    for (const [status, answer] of Object.entries(op.responses || {})) {
      const schema = answer.content && answer.content["application/json"] && answer.content["application/json"].schema;
      body.append($("p", {text: status + " " + (answer.description || "")}));
      if (schema && status !== "default") body.append($("pre", {text: json(resolve(spec, schema, 0))}));
    }
    const out = $("pre", {class: "result", hidden: ""});
    const btn = $("button", {type: "button", text: "Send request"});
    btn.addEventListener("click", async () => {
      let url = path;
      const query = new URLSearchParams();
      for (const [key, input] of Object.entries(inputs)) {
        const [where, name] = key.split(/:(.*)/s);
        if (where === "path") url = url.replace("{" + name + "}", encodeURIComponent(input.value));
        else if (where === "query" && input.value) query.set(name, input.value);
      }
      if ([...query].length) url += "?" + query;
      const headers = {};
      const token = document.getElementById("token").value.trim();
      if (token) headers.Authorization = "Bearer " + token;
      const init = {method: method.toUpperCase(), headers};
      if (bodyInput && bodyInput.value.trim()) { headers["Content-Type"] = "application/json"; init.body = bodyInput.value; }
      out.hidden = false;
      out.textContent = init.method + " " + url + " …";
      try {
        const resp = await fetch(url, init);
        const text = await resp.text();
        let shown = text;
        try { shown = json(JSON.parse(text)); } catch (e) { /* not JSON */ }
        out.textContent = resp.status + " " + resp.statusText + "\n\n" + shown.slice(0, 200000);
      } catch (e) {
        out.textContent = "The request failed: " + e;
      }
    });
    body.append(btn, out);
    det.append(body);
    return det;
  }

  async function main() {
    const main = document.getElementById("ops");
    let spec;
    try {
      spec = await (await fetch("/v1/openapi.json")).json();
    } catch (e) {
      main.textContent = "Could not read /v1/openapi.json: " + e;
      return;
    }
    document.getElementById("title").textContent = spec.info.title + " " + spec.info.version;
    main.textContent = "";
    const byTag = new Map((spec.tags || []).map((t) => [t.name, []]));
    for (const [path, ops] of Object.entries(spec.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const tag = (op.tags && op.tags[0]) || "other";
        if (!byTag.has(tag)) byTag.set(tag, []);
        byTag.get(tag).push(operation(spec, method, path, op));
      }
    }
    const described = new Map((spec.tags || []).map((t) => [t.name, t.description]));
    for (const [tag, nodes] of byTag) {
      if (!nodes.length) continue;
      const section = $("section", {id: "tag-" + tag, class: "tag"},
        $("h2", {text: tag + " "}, described.get(tag) ? $("small", {text: described.get(tag)}) : null));
      nodes.forEach((n) => section.append(n));
      main.append(section);
    }
    document.getElementById("filter").addEventListener("input", (ev) => {
      const q = ev.target.value.trim().toLowerCase();
      for (const d of main.querySelectorAll("details")) d.hidden = q && !d.dataset.search.includes(q);
      for (const s of main.querySelectorAll("section")) s.hidden = !s.querySelector("details:not([hidden])");
    });
    document.body.dataset.ready = "true";
  }
  main();
})();
