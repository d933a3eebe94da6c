// SPDX-License-Identifier: MIT
// Validates Kubernetes objects against the API's own OpenAPI schemas, offline, with npm's kubernetes-models (and the prometheus-operator's CRD models).
//
// usage: node validate_models.mjs MODELS_DIR OBJECTS.json
// MODELS_DIR holds node_modules/ as scripts/deps.sh installed it from tests/kubernetes/models/
// (pinned by its package-lock.json). OBJECTS.json: [{"where": "file.yaml#2", "object": {...}}].
// Prints one line an object: "PASS where: Kind name (package@version)", "FAIL where: the
// schema's errors", or "NOSCHEMA where: apiVersion/kind" when no installed package models
// it; exits 1 when an object failed, 3 when one had no schema, 2 on usage.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

// the packages that model API groups, in the order they are asked
const PACKAGES = ["kubernetes-models", "@kubernetes-models/prometheus-operator"];

function version(dir, pkg) {
  return JSON.parse(readFileSync(join(dir, "node_modules", pkg, "package.json"), "utf8")).version;
}

// The model class of apiVersion/kind: node_modules/PKG/APIVERSION/KIND.mjs (or .js: each
// package has one file a kind), imported by its path.
async function modelOf(dir, apiVersion, kind) {
  if (!/^[A-Za-z0-9.\/-]+$/.test(apiVersion) || !/^[A-Za-z0-9]+$/.test(kind)) return null;
  for (const pkg of PACKAGES) {
    for (const ext of [".mjs", ".js"]) {
      const file = join(dir, "node_modules", pkg, apiVersion, kind + ext);
      if (!existsSync(file)) continue;
      const mod = await import(pathToFileURL(file).href);
      const Model = mod[kind] ?? mod.default?.[kind];
      if (typeof Model === "function") return { Model, pkg: `${pkg}@${version(dir, pkg)}` };
    }
  }
  return null;
}

// The schemas leave out additionalProperties: false (the API server's own field validation
// refuses unknown fields, the OpenAPI schemas alone do not), so a misspelt field would pass.
// The compiled schema reads every property it defines: the validator runs on a proxy of the
// object that records which properties of each object it read; a property it never read is
// one the schema does not have. An object the validator enumerated (a map: labels, data) may
// hold any key, and one it read nothing of (a free-form field) is not judged.
function recording(obj, path, read, listed) {
  const kids = new Map();
  const note = (k) => {
    if (typeof k !== "string") return;
    if (!read.has(path)) read.set(path, new Set());
    read.get(path).add(k);
  };
  return new Proxy(obj, {
    get(t, k, r) {
      note(k);
      const v = Reflect.get(t, k, r);
      if (typeof k !== "string" || !v || typeof v !== "object" || !Object.hasOwn(t, k)) return v;
      if (!kids.has(k)) kids.set(k, recording(v, `${path}/${k}`, read, listed));
      return kids.get(k);
    },
    has(t, k) {
      note(k);
      return Reflect.has(t, k);
    },
    ownKeys(t) {
      listed.add(path);
      return Reflect.ownKeys(t);
    },
  });
}

function unknownFields(obj, path, read, listed, out) {
  if (!obj || typeof obj !== "object") return out;
  if (!Array.isArray(obj) && read.has(path) && !listed.has(path))
    for (const k of Object.keys(obj)) if (!read.get(path).has(k)) out.push(`${path}/${k}`);
  for (const k of Object.keys(obj)) unknownFields(obj[k], `${path}/${k}`, read, listed, out);
  return out;
}

// The schema's own checks (types, required fields, formats, enums), then no unknown field.
function validateStrict(Model, object) {
  const model = new Model(object), read = new Map(), listed = new Set();
  Model.prototype.validate.call(recording(model, "", read, listed));
  const unknown = unknownFields(model, "", read, listed, []);
  if (unknown.length)
    throw new Error(`unknown field${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")} (not in the schema)`);
}

function describe(err) {
  // @kubernetes-models/validate throws an Error whose message lists ajv's findings
  return String(err && err.message ? err.message : err).replace(/\s+/g, " ").slice(0, 400);
}

async function main(argv) {
  if (argv.length !== 2) {
    console.error("usage: node validate_models.mjs MODELS_DIR OBJECTS.json");
    return 2;
  }
  const [dir, input] = argv;
  let failed = 0, noschema = 0;
  for (const { where, object } of JSON.parse(readFileSync(input, "utf8"))) {
    const name = `${object?.kind ?? "?"} ${object?.metadata?.name ?? "?"}`;
    const m = object && (await modelOf(dir, String(object.apiVersion), String(object.kind)));
    if (!m) {
      console.log(`NOSCHEMA ${where}: ${object?.apiVersion}/${object?.kind}`);
      noschema++;
      continue;
    }
    try {
      validateStrict(m.Model, object);
      console.log(`PASS ${where}: ${name} (${m.pkg})`);
    } catch (err) {
      console.log(`FAIL ${where}: ${name}: ${describe(err)}`);
      failed++;
    }
  }
  return failed ? 1 : noschema ? 3 : 0;
}

process.exitCode = await main(process.argv.slice(2));
