import ts from 'typescript';
import fs from 'fs'; import path from 'path';
const files = [];
function walk(d){ for (const e of fs.readdirSync(d,{withFileTypes:true})) { const p=path.join(d,e.name); if(e.isDirectory()) walk(p); else if(/\.(ts|tsx)$/.test(e.name) && !/\.test\.tsx?$/.test(e.name)) files.push(p);} }
walk('src'); if (fs.existsSync('bench')) walk('bench');
const layer = f => { const r = path.relative('src', f); if (r.startsWith('..')) return f.split('/')[0]; const parts=r.split('/'); return parts.length===1? parts[0] : parts[0]; };
const pairs = new Map();
for (const f of files) {
  const info = ts.preProcessFile(fs.readFileSync(f,'utf8'), true, true);
  for (const imp of info.importedFiles) {
    if (!imp.fileName.startsWith('.')) continue;
    const target = path.normalize(path.join(path.dirname(f), imp.fileName));
    const a = layer(f), b = layer(target);
    if (a===b) continue;
    const k = a+' -> '+b; if(!pairs.has(k)) pairs.set(k, []); pairs.get(k).push(path.relative('.',f)+' => '+path.relative('.',target));
  }
}
for (const [k,v] of [...pairs].sort()) { console.log(k, v.length); if (process.argv[2]) for (const x of v) console.log('   ', x); }
