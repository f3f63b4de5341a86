"""Built-in knowledge of what commands do, table-driven.

Each row is a command line (run through the real parser and `judge_script`), the
kind of every judgement it yields, in order, and optionally the paths read and
written (over all judgements). Kinds: `ro` read-only, `w` known with writes, `??`
not known (may do anything), `ask` a floor reason. Both ways for every command,
wrapper and flag: the read-only form and the flags that are not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from tether.policy.knowledge import Judgement, judge, judge_script
from tether.policy.shellparse import Redirect, SimpleCommand, Word


@dataclass(frozen=True)
class Row:
    cmd: str
    kinds: str
    reads: tuple[str, ...] | None = None
    writes: tuple[str, ...] | None = None


def R(cmd: str, kinds: str, reads: str | None = None, writes: str | None = None) -> Row:
    """A row; `reads`/`writes` are space-separated paths ("" = none, None = unchecked)."""
    return Row(
        cmd,
        kinds,
        None if reads is None else tuple(reads.split()),
        None if writes is None else tuple(writes.split()),
    )


def kind(j: Judgement) -> str:
    if j.ask is not None:
        return "ask"
    if not j.effects_known:
        return "??"
    return "w" if j.writes else "ro"


ROWS = [
    # --- plain read-only programs and their file operands
    R("ls", "ro", "."),
    R("ls -la src", "ro", "src"),
    R("ls -I '*.pyc' src", "ro", "*.pyc src"),
    R("ls -I /etc", "ro", "/etc"),
    R("cat a.txt b.txt", "ro", "a.txt b.txt"),
    R("cat -", "ro", ""),
    R("cat /etc/passwd", "ro", "/etc/passwd"),
    R("cat ~/notes.txt ../x", "ro", "~/notes.txt ../x"),
    R("cat *.py", "ro", "*.py"),
    R("head -n 5 a", "ro", "a"),
    R("head -5 a", "ro", "a"),
    R("tail -f log.txt", "ro", "log.txt"),
    R("tail -n +3 a", "ro", "a"),
    R("wc -l a b", "ro", "a b"),
    R("wc --files0-from=list", "ro", "list"),
    R("stat -c %s f", "ro", "f"),
    R("file f", "ro", "f"),
    R("file -C -m magic", "??"),
    R("du -sh .", "ro", "."),
    R("du", "ro", "."),
    R("df -h", "ro", ""),
    R("tree -L 2 src", "ro", "src"),
    R("tree", "ro", "."),
    R("tree -o out.txt", "w", ".", "out.txt"),
    R("tree -R -H x", "??"),
    R("nl f", "ro", "f"),
    R("od -c f", "ro", "f"),
    R("xxd f", "ro", "f"),
    R("xxd f out.hex", "w", "f", "out.hex"),
    R("xxd -r hex bin", "w", "hex", "bin"),
    R("xxd a b c", "??"),
    R("hexdump -C f", "ro", "f"),
    R("md5sum f", "ro", "f"),
    R("sha256sum -c sums.txt", "ro", "sums.txt"),
    R("diff -u a b", "ro", "a b"),
    R("diff -r dir1 dir2", "ro", "dir1 dir2"),
    R("cmp a b", "ro", "a b"),
    R("comm -12 a b", "ro", "a b"),
    R("readlink -f x", "ro", "x"),
    R("realpath --relative-to=/etc x", "ro", "/etc x"),
    R("basename /a/b.txt .txt", "ro", ""),
    R("dirname /a/b", "ro", ""),
    # --- searching
    R("grep foo a.txt", "ro", "a.txt"),
    R("grep -rn foo src", "ro", "src"),
    R("grep -rn foo", "ro", "."),
    R("grep foo", "ro", ""),
    R('grep "a;b" f', "ro", "f"),
    R("grep -e foo -e bar f", "ro", "f"),
    R("grep -f pats.txt f", "ro", "pats.txt f"),
    R("grep -in foo f", "ro", "f"),
    R("egrep 'a|b' f", "ro", "f"),
    R("fgrep -x a f", "ro", "f"),
    R("grep --regexp=foo f", "ro", "f"),
    R("rg foo", "ro", "."),
    R("rg -n foo src", "ro", "src"),
    R("rg --files src", "ro", "src"),
    R("rg -z foo", "ro", "."),
    R("rg --pre cat foo", "??"),
    R("rg --pre=./x.sh foo", "??"),
    R("rg --hostname-bin=x foo", "??"),
    R("rg --pre-glob '*.gz' foo", "ro"),
    R("ag foo src", "ro", "src"),
    R("ag --pager less foo", "??"),
    R("jq .name f.json", "ro", "f.json"),
    R("jq -r '.[] | .x' a.json b.json", "ro", "a.json b.json"),
    R("jq -f prog.jq in.json", "ro", "prog.jq in.json"),
    R("jq --rawfile t t.txt -n '$t'", "ro", "t.txt"),
    # --- text tools with writing flags
    R("sort f", "ro", "f"),
    R("sort -u -k2 f", "ro", "f"),
    R("sort -o out.txt in.txt", "w", "in.txt", "out.txt"),
    R("sort -uo out in", "w", "in", "out"),
    R("sort -ofile in", "w", "in", "file"),
    R("sort --output=out in", "w", "in", "out"),
    R("sort --outp=out in", "w", "in", "out"),
    R("sort in -o out", "w", "in", "out"),
    R("sort --compress-program=gzip f", "??"),
    R("sort --comp=x f", "??"),
    R("sort --o out in", "w", "in", "out"),
    R("sort --out -o in", "??"),
    R("uniq f", "ro", "f"),
    R("uniq -c f", "ro", "f"),
    R("uniq in out", "w", "in", "out"),
    R("uniq -f 1 in out", "w", "in", "out"),
    R("cut -d, -f1 f", "ro", "f"),
    R("tr a-z A-Z", "ro", ""),
    R("paste a b", "ro", "a b"),
    R("join -t, a b", "ro", "a b"),
    R("column -t f", "ro", "f"),
    R("fold -w 80 f", "ro", "f"),
    R("fmt f", "ro", "f"),
    R("expand f", "ro", "f"),
    R("rev f", "ro", "f"),
    R("tac f", "ro", "f"),
    R("strings bin", "ro", "bin"),
    R("strings @/etc/shadow", "ro", "@/etc/shadow /etc/shadow"),
    R("grep -C 3 foo f", "ro", "foo f"),
    R("fmt -p /etc/passwd", "ro", "/etc/passwd"),
    R("base64 -o /etc/x -i y", "w", "y", "/etc/x"),
    R("more -o log f", "w", "f", "log"),
    R("base64 -d f", "ro", "f"),
    R("iconv -f latin1 -t utf8 f", "ro", "f"),
    R("iconv -f latin1 -t utf8 -o out f", "w", "f", "out"),
    R("shuf -o out f", "w", "f", "out"),
    R("tee", "ro"),
    R("tee out.txt", "w", "", "out.txt"),
    R("tee -a log1 log2", "w", "", "log1 log2"),
    R("tee /dev/null", "ro"),
    R("less f", "ro", "f"),
    R("less -o log f", "w", "f", "log"),
    R("less '+!rm x' f", "??"),
    R("less +10 f", "ro", "f"),
    R("less -p +x /etc/passwd", "ro", "/etc/passwd"),
    R("date -d +1day", "ro", ""),
    R("less -k keys f", "??"),
    R("more f", "ro", "f"),
    R("man ls", "ro"),
    R("man -k printf", "ro"),
    R("man -P evil ls", "??"),
    R("man -H ls", "??"),
    # --- simple informational commands
    R("echo hello world", "ro", ""),
    R("echo $HOME", "ro", ""),
    R("printf '%s\\n' a b", "ro", ""),
    R("pwd", "ro"),
    R("true", "ro"),
    R("false", "ro"),
    R(":", "ro"),
    R("seq 1 10", "ro"),
    R("date", "ro"),
    R("date +%s", "ro"),
    R("date -u +%Y-%m-%d", "ro"),
    R("date -d yesterday", "ro"),
    R("date -s '2020-01-01'", "??"),
    R("date --set=now", "??"),
    R("date 0101000025", "??"),
    R("date -r file +%s", "ro", "file"),
    R("whoami", "ro"),
    R("id -u", "ro"),
    R("uname -a", "ro"),
    R("hostname", "ro"),
    R("hostname -f", "ro"),
    R("hostname evil", "??"),
    R("hostname -F file", "??"),
    R("which git", "ro"),
    R("type ls", "ro"),
    R("whereis ls", "ro"),
    R("ps aux", "ro"),
    R("env", "ro"),
    R("printenv HOME", "ro"),
    R("locale", "ro"),
    R("nproc", "ro"),
    R("free -m", "ro"),
    R("uptime", "ro"),
    R("sleep 1", "ro"),
    R("test -f x", "ro"),
    R("test -v 'a[$(id)]'", "??"),
    R("test $x", "??"),
    R("expr 1 + 2", "ro"),
    # --- sed
    R("sed -n '1,10p' f.py", "ro", "f.py"),
    R("sed 's/a/b/g' f", "ro", "f"),
    R("sed -e 's/a/b/' -e '/x/d' f", "ro", "f"),
    R("sed -E 's/(a|b)+/x/' f", "ro", "f"),
    R("sed 's|/usr|/opt|g' f", "ro", "f"),
    R("sed -n '/start/,/end/p' f", "ro", "f"),
    R("sed '$d' f", "ro", "f"),
    R("sed -n '$=' f", "ro", "f"),
    R("sed ':a;N;$!ba;s/\\n/ /g' f", "ro", "f"),
    R("sed '/x/{s/a/b/;p}' f", "ro", "f"),
    R("sed '1i\\\nheader' f", "ro", "f"),
    R("sed 'r other.txt' f", "ro", "other.txt f"),
    R("sed -i 's/a/b/' f.py", "w", "f.py", "f.py"),
    R("sed -i.bak 's/a/b/' f", "w", "f", "f f.bak"),
    R("sed --in-place=.orig 's/a/b/' f", "w", "f", "f f.orig"),
    R("sed -ni 's/a/b/p' f", "w", "f", "f"),
    R("sed -in 's/a/b/' f", "w", "f", "f fn"),
    R("sed -i '' 's/a/b/' f", "w", None, "s/a/b/ f"),
    R("sed --in 's/a/b/' f", "w", "f", "f"),
    R("sed 'w out.txt' f", "w", "f", "out.txt"),
    R("sed 's/a/b/w out.txt' f", "w", "f", "out.txt"),
    R("sed -n 's/a/b/gpw /dev/stdout' f", "ro", "f"),
    R("sed '/x/W log' f", "w", "f", "log"),
    R("sed 'e rm -rf x' f", "??"),
    R("sed 's/x/rm -rf y/e' f", "??"),
    R("sed '1e date' f", "??"),
    R("sed -f script.sed f", "??"),
    R("sed --file=script.sed f", "??"),
    R("sed 's/[/]/x/w out' f", "w", "f", "out"),
    R("sed 's/[^/]*$//' f", "ro", "f"),
    R("sed 's/[]/]/x/' f", "ro", "f"),
    R("sed -n '/^#/!p' f", "ro", "f"),
    R("sed -e :a -e '$!N;s/\\n//;ta' f", "ro", "f"),
    R("sed '1~3d' f", "ro", "f"),
    R("sed -n '2{p;q}' f", "ro", "f"),
    R("sed '/x/,+2d' f", "ro", "f"),
    R("sed -n '0,/re/p' f", "ro", "f"),
    R("sed 's/[[:space:]]*$//' f", "ro", "f"),
    R("sed 's#a#b#2' f", "ro", "f"),
    R("sed -n '/def foo/,/^def /p' f", "ro", "f"),
    R("sed '1a foo; w /tmp/x' f", "??"),
    R("sed $script f", "??"),
    R("sed -n p *", "??"),
    # --- awk
    R("awk '{print $1}' f.txt", "ro", "f.txt"),
    R("awk -F, '{print $2}' f", "ro", "f"),
    R("awk 'NR > 1 && $3 > 100 {print}' f", "ro", "f"),
    R("awk '/a|b/ {n++} END {print n}' f", "ro", "f"),
    R("awk '{ if (a || b) print }' f", "ro", "f"),
    R("awk '{print ($1 > 5)}' f", "ro", "f"),
    R("awk -v x=1 '{print x}' f v=2", "ro", "f"),
    R("awk '{print > \"out.txt\"}' f", "w", "f", "out.txt"),
    R("awk '{print $1 >> \"log\"}' f", "w", "f", "log"),
    R("awk '{print > \"/dev/stderr\"}' f", "ro", "f"),
    R("awk '{print > $2}' f", "??"),
    R('awk \'{printf("%s", $1) > "o"}\' f', "w", "f", "o"),
    R("awk '{system(\"rm x\")}' f", "??"),
    R("awk '{print | \"sh\"}' f", "??"),
    R("awk 'BEGIN {\"date\" | getline d}'", "??"),
    R("awk 'BEGIN {print |& \"cat\"}'", "??"),
    R("awk 'BEGIN {while ((getline l < \"/etc/passwd\") > 0) print l}'", "ro", "/etc/passwd"),
    R("awk 'BEGIN {getline l < f}'", "??"),
    R("awk -f prog.awk f", "??"),
    R("gawk '@load \"x\"; {print}' f", "??"),
    R("gawk -l ext '{print}'", "??"),
    R("gawk -o '{print}' f", "??"),
    R("gawk --pretty-print=x '{print}' f", "??"),
    R('awk \'BEGIN { f = "system"; @f("id") }\'', "??"),
    R("mawk '{print}' f", "ro", "f"),
    # --- git
    R("git status", "ro"),
    R("git status --porcelain", "ro"),
    R("git log --oneline -5", "ro"),
    R("git log -p -- src/a.py", "ro"),
    R("git show HEAD~1", "ro"),
    R("git diff", "ro"),
    R("git diff --stat HEAD", "ro"),
    R("git diff --no-index /etc/a /etc/b", "ro", "/etc/a /etc/b"),
    R("git diff --output=/tmp/d", "w", None, "/tmp/d"),
    R("git log --out=x", "w", None, "x"),
    R("git diff --ext-diff", "??"),
    R("git log --show-signature", "??"),
    R("git blame f.py", "ro", "f.py"),
    R("git grep -n foo -- src", "ro", "src"),
    R("git grep -O foo", "??"),
    R("git grep --open-files-in-pager=vi foo", "??"),
    R("git ls-files", "ro"),
    R("git rev-parse HEAD", "ro"),
    R("git describe --tags", "ro"),
    R("git cat-file -p HEAD", "ro"),
    R("git for-each-ref --format='%(refname)'", "ro"),
    R("git shortlog -sn", "ro"),
    R("git merge-base a b", "ro"),
    R("git reflog", "ro"),
    R("git reflog show HEAD", "ro"),
    R("git reflog expire --all", "??"),
    R("git branch", "ro"),
    R("git branch -a", "ro"),
    R("git branch -vv", "ro"),
    R("git branch --show-current", "ro"),
    R("git branch --merged", "ro"),
    R("git branch --contains HEAD", "ro"),
    R("git branch -l 'feat/*'", "ro"),
    R("git branch new", "??"),
    R("git branch -D old", "??"),
    R("git branch -m a b", "??"),
    R("git tag", "ro"),
    R("git tag -l 'v1.*'", "ro"),
    R("git tag -n5", "ro"),
    R("git tag v1.0", "??"),
    R("git tag -d v1.0", "??"),
    R("git remote", "ro"),
    R("git remote -v", "ro"),
    R("git remote get-url origin", "ro"),
    R("git remote show -n origin", "ro"),
    R("git remote show origin", "??"),
    R("git remote add x url", "??"),
    R("git stash list", "ro"),
    R("git stash show -p", "ro"),
    R("git stash", "??"),
    R("git stash pop", "??"),
    R("git config user.name", "ro"),
    R("git config --get user.name", "ro"),
    R("git config --list", "ro"),
    R("git config -l --show-origin", "ro"),
    R("git config get user.name", "ro"),
    R("git config user.name bob", "??"),
    R("git config --global core.pager less", "??"),
    R("git config --unset user.name", "??"),
    R("git config edit", "??"),
    R("git worktree list", "ro"),
    R("git worktree add ../x", "??"),
    R("git submodule status", "ro"),
    R("git submodule update", "??"),
    R("git version", "ro"),
    R("git --version", "ro"),
    R("git -C ../other status", "ro", "../other"),
    R("git --git-dir=/x/.git log", "??"),
    R("git --work-tree=/x status", "ro", "/x"),
    R("git --no-pager log", "ro"),
    R("git -c core.pager=evil log", "??"),
    R("/usr/bin/git -c core.pager=evil log", "??"),
    R("git --config-env=core.pager=X log", "??"),
    R("git -p log", "??"),
    R("git --exec-path=/tmp log", "??"),
    R("git --exec-path", "ro"),
    R("git help log", "??"),
    R("git commit -m x", "??"),
    R("git push", "??"),
    R("git checkout main", "??"),
    R("git reset --hard", "??"),
    R("git add .", "??"),
    R("git clean -fdx", "??"),
    R("git fetch", "??"),
    R("git ls-remote origin", "??"),
    R("git lg", "??"),
    R("git $sub", "??"),
    # --- find
    R("find . -name '*.py'", "ro", "."),
    R("find", "ro", "."),
    R("find src tests -type f -newer stamp", "ro", "src tests stamp"),
    R("find . -maxdepth 2 -name x -print0", "ro", "."),
    R("find / -name x", "ro", "/"),
    R("find . -delete", "??"),
    R("find . -name '*.o' -delete", "??"),
    R("find . -name -delete", "ro"),
    R("find . -fprint out.txt", "w", ".", "out.txt"),
    R("find . -fprintf out.txt '%p'", "w", ".", "out.txt"),
    R("find . -fls out", "w", ".", "out"),
    R("find . -exec grep -l foo {} +", "ro ro"),
    R("find . -exec grep -l foo {} \\;", "ro ro"),
    R("find . -type f -exec rm {} \\;", "ro ??"),
    R("find . -execdir rm {} +", "ro ??"),
    R("find . -ok rm {} \\;", "ro ??"),
    R("find . -exec sh -c 'rm \"$1\"' _ {} \\;", "ro ro ??"),
    R("find . -exec", "??"),
    R("find . -frobnicate", "??"),
    R("find . -files0-from list", "??"),
    R("find . -name $x", "??"),
    R("find . -newermt '1 day ago'", "ro"),
    R("find $dir -name x", "??"),
    # --- wrappers
    R("timeout 5 ls", "ro ro"),
    R("timeout -s KILL 5 rm x", "ro ??"),
    R("timeout 5", "ro"),
    R("nice -n 10 make", "ro ??"),
    R("nice -5 ls", "ro ro"),
    R("nice", "ro"),
    R("nohup ls", "w ro", None, "nohup.out"),
    R("env FOO=1 ls", "ro ro"),
    R("env -i PATH=/x ls", "ro ask"),
    R("env LD_PRELOAD=/tmp/x.so ls", "ro ask"),
    R("env -u HOME ls", "ro ro"),
    R("env -C /etc cat passwd", "??"),
    R("env -S 'rm -rf x'", "??"),
    R("command ls", "ro ro"),
    R("command -v git", "ro"),
    R("command -V git", "ro"),
    R("command -p rm x", "ro ??"),
    R("builtin cd src", "ro ro", "src"),
    R("builtin", "ask"),
    R("stdbuf -oL grep foo f", "ro ro"),
    R("ionice -c3 ls", "ro ro"),
    R("ionice -p 1 -c3", "??"),
    R("xargs grep foo", "ro ro"),
    R("xargs", "ro ro"),
    R("xargs rm", "ro ??"),
    R("xargs -0 cat", "ro ro"),
    R("xargs -I{} cat {}", "ro ro"),
    R("xargs -I{} mv {} {}.bak", "ro ??"),
    R("xargs -I{} {} --version", "??"),
    R("xargs sort", "ro ??"),
    R("xargs env", "ro ??"),
    R("xargs -a list.txt cat", "ro ro", "list.txt"),
    R("xargs sh -c 'ls'", "ro ?? ??"),
    R("timeout 5 nice env FOO=1 xargs rm", "ro ro ro ro ??"),
    R("timeout 5 $cmd", "ro ask"),
    R("sudo rm -rf /", "?? ??"),
    R("sudo ls", "?? ro"),
    R("sudo -u bob cat /etc/shadow", "?? ro", "/etc/shadow"),
    R("doas ls", "?? ro"),
    R("su -c 'rm x' root", "?? ??"),
    R("pkexec ls", "?? ro"),
    R("runuser -u bob -- ls", "?? ro"),
    # --- shells
    R("sh -c 'ls'", "ro ro"),
    R('sh -c "ls; rm x"', "ro ro ??"),
    R("bash -c 'cat a | grep b'", "ro ro ro"),
    R("bash -ec 'ls'", "ro ro"),
    R("bash -o pipefail -c 'ls'", "ro ro"),
    R("bash -c 'bash -c \"rm x\"'", "ro ro ??"),
    R('bash -c "$x"', "ask"),
    R("bash -c 'eval $x'", "ro ask"),
    R("bash script.sh", "??"),
    R("bash", "??"),
    R("bash -s", "??"),
    R("bash -lc 'ls'", "?? ro"),
    R("bash -lc 'sudo ls'", "?? ?? ro"),
    R("bash -ic 'rm x'", "?? ??"),
    R("bash --rcfile x -c 'ls'", "?? ro"),
    R("bash -O extglob -c 'ls'", "?? ro"),
    R("zsh -c 'ls'", "?? ro"),
    R("zsh -c 'x=1; echo ${(e)x}'", "ask ro ro"),
    R("dash -c 'ls'", "ro ro"),
    R("fish -c 'ls'", "??"),
    # --- interpreters, build tools, scripts, network
    R("python -c 'print(1)'", "??"),
    R("python3 -m http.server", "??"),
    R("python3 script.py", "??"),
    R("python3", "??"),
    R("python3 --version", "ro"),
    R("python3.11 -V", "ro"),
    R("node -e 'x'", "??"),
    R("node --version", "ro"),
    R("perl -e 'unlink x'", "??"),
    R("ruby -e 'x'", "??"),
    R("php -r 'x'", "??"),
    R("deno eval 'x'", "??"),
    R("osascript -e 'x'", "??"),
    R("make", "??"),
    R("make test", "??"),
    R("npm run test", "??"),
    R("npm --version", "ro"),
    R("npx x", "??"),
    R("cargo build", "??"),
    R("cargo --version", "??"),
    R("go version", "??"),
    R("pip --version", "??"),
    R("yarn --version", "??"),
    R("make --version", "ro"),
    R("go test ./...", "??"),
    R("pytest -q", "??"),
    R("pip install x", "??"),
    R("./x.sh", "??"),
    R("bin/x", "??"),
    R("/tmp/x", "??"),
    R("curl https://x", "??"),
    R("wget x", "??"),
    R("ssh host ls", "??"),
    R("frobnicate", "??"),
    # --- file changes
    R("touch a b", "w", "", "a b"),
    R("touch -r ref a", "w", "ref", "a"),
    R("mkdir -p d/e", "w", "", "d/e"),
    R("cp src dst", "w", "src", "dst"),
    R("cp -r a b dir/", "w", "a b", "dir/"),
    R("cp -t dir a b", "w", "a b", "dir"),
    R("cp a", "??"),
    R("cp * dir", "??"),
    R("cp a $dst", "??"),
    R("mv a b", "w", "", "a b"),
    R("ln -s /etc/passwd link", "w", "/etc/passwd", "link"),
    R("ln -s ../x", "w", "../x", "x"),
    R("rm x", "??"),
    R("rm -rf /", "??"),
    R("rmdir d", "??"),
    R("chmod +x f", "??"),
    R("chown u f", "??"),
    R("truncate -s 0 f", "??"),
    R("dd if=/dev/zero of=f", "??"),
    R("install -m 755 a b", "??"),
    R("shred f", "??"),
    R("patch -p1", "??"),
    R("tar -tzf a.tgz", "ro", "a.tgz"),
    R("tar tvf a.tar", "ro", "a.tar"),
    R("tar --list --file=a.tar", "ro", "a.tar"),
    R("tar xzf a.tgz", "??"),
    R("tar -czf a.tgz src", "??"),
    R("tar -tf a.tar --use-compress-program=evil", "??"),
    R("tar -tf host:a.tar", "??"),
    R("unzip -l a.zip", "ro", "a.zip"),
    R("unzip -p a.zip f", "ro", "a.zip"),
    R("unzip a.zip", "??"),
    R("unzip -o a.zip", "??"),
    R("zipinfo a.zip", "ro", "a.zip"),
    R("gzip -dc a.gz", "ro", "a.gz"),
    R("gzip -l a.gz", "ro", "a.gz"),
    R("gzip a", "??"),
    R("gunzip a.gz", "??"),
    R("zcat a.gz", "ro", "a.gz"),
    # --- shell builtins
    R("cd src", "ro", "src"),
    R("cd", "ro", "~"),
    R("cd -", "??"),
    R("cd .. && cat x", "ro ro", ".. x"),
    R("pushd src", "ro", "src"),
    R("popd", "ro"),
    R("set -euo pipefail", "ro"),
    R("set -x", "ro"),
    R("set", "ro"),
    R("set -- a b", "ro"),
    R("set -k", "ask"),
    R("set -o vi", "ask"),
    R("shopt -s extglob", "ask"),
    R("export FOO=1", "ro"),
    R("export PATH=/tmp:$PATH", "ask"),
    R("declare -x BASH_ENV=x", "ask"),
    R("declare -n ref=PATH", "ask"),
    R("declare -f", "ro"),
    R("local x=1", "ro"),
    R("readonly IFS", "ask"),
    R("export 'a[$(id)]=1'", "ask"),
    R("read -r line", "ro"),
    R("read PATH", "ask"),
    R("read -a 'a[$(id)]'", "ask"),
    R("mapfile -t lines", "ro"),
    R("mapfile -C cb lines", "ask"),
    R("printf -v x %s y", "ro"),
    R("printf -v PATH %s y", "ask"),
    R('printf "$fmt" y', "??"),
    R("unset x", "ro"),
    R("unset 'a[$(id)]'", "ask"),
    R("hash", "ro"),
    R("hash -p /tmp/evil ls", "ask"),
    R("umask", "ro"),
    R("umask 000", "??"),
    R("let x=1", "??"),
    R("exit 1", "ro"),
    R("eval ls", "ask"),
    R("source x.sh", "ask"),
    R(". x.sh", "ask"),
    R("exec ls", "ask ro"),
    R("exec 3>file", "ask", None, "file"),
    R("trap 'rm x' EXIT", "ask"),
    R("alias ls='rm -rf'", "ask"),
    R("unalias ls", "ask"),
    R("enable -f x.so x", "ask"),
    # --- assignments and redirections
    R("FOO=1 ls", "ro"),
    R("x=1", "ro"),
    R("PATH=/tmp:$PATH", "ask"),
    R("LD_PRELOAD=/tmp/x.so ls", "ask"),
    R("LD_LIBRARY_PATH=. ls", "ask"),
    R("DYLD_INSERT_LIBRARIES=x ls", "ask"),
    R("BASH_ENV=x bash -c ls", "ask ro"),
    R("GIT_PAGER=evil git log", "ask"),
    R("GIT_SSH_COMMAND=evil git fetch", "ask"),
    R("GIT_CONFIG_GLOBAL=x git status", "ask"),
    R("GIT_AUTHOR_NAME=x git log", "ro"),
    R("PAGER=evil man ls", "ask"),
    R("PYTHONPATH=. ls", "ask"),
    R("NODE_OPTIONS=--require=x ls", "ask"),
    R("IFS=, ls", "ask"),
    R("HOME=/tmp git status", "ask"),
    R("LC_ALL=C sort f", "ro"),
    R("ls > out.txt", "w", None, "out.txt"),
    R("ls >> out.txt", "w", None, "out.txt"),
    R("ls &> out.txt", "w", None, "out.txt"),
    R("ls 2> err.txt", "w", None, "err.txt"),
    R("ls >| out", "w", None, "out"),
    R("ls > /dev/null 2>&1", "ro"),
    R("ls 2>/dev/null", "ro"),
    R("ls > /dev/stderr", "ro"),
    R("ls > $out", "ask"),
    R("ls > ~/out", "w", None, "~/out"),
    R("cat < in.txt", "ro", "in.txt"),
    R("cat <<EOF\nhi\nEOF", "ro", ""),
    R("cat <<< hi", "ro", ""),
    R("diff <(ls a) <(ls b)", "ro ro ro", "a b"),
    R("ls | tee >(grep x)", "ro ro ro"),
    R("echo $(rm x)", "ro ??"),
    R('cat "$HOME/x"', "ro", '"$HOME/x"'),
    R("cat $f", "ro", "$f"),
    R("$cmd x", "ask"),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.cmd for r in ROWS])
def test_knowledge_table(row: Row) -> None:
    judgements, problems = judge_script(row.cmd)
    assert not problems, problems
    got = " ".join(kind(j) for j in judgements)
    detail = "\n".join(f"{j.argv} {kind(j)}: {j.reason} {j.ask or ''}" for j in judgements)
    assert got == row.kinds, detail
    assert all("could not be judged" not in j.reason for j in judgements), detail
    if row.reads is not None:
        assert tuple(p for j in judgements for p in j.reads) == row.reads, detail
    if row.writes is not None:
        assert tuple(p for j in judgements for p in j.writes) == row.writes, detail


def test_the_table_is_large_and_covers_both_ways() -> None:
    assert len(ROWS) >= 200
    kinds = {k for r in ROWS for k in r.kinds.split()}
    assert kinds == {"ro", "w", "??", "ask"}


ROWS_MORE = [
    R("cat {/etc/passwd,x}", "ro", "/etc/passwd x"),
    R("cat a{1..3}", "ro", "a1 a2 a3"),
    R("cat {1..1000}", "ro", "${1..1000}"),
    R("cat ~root/.ssh/id_rsa", "ro", "~root/.ssh/id_rsa"),
    R("grep $pat f", "ro", "f $pat"),
    R("rg $pat", "??"),
    R("sort $opts f", "??"),
    R("sort -k $k f", "??"),
    R("sort -- $f", "ro", "$f"),
    R("ls -- -rf", "ro", "-rf"),
    R("echo x | sh", "ro ??"),
    R("cat f > >(sh)", "ro ??"),
    R("env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls", "ro ask ro"),
    R("sudo -E env LD_PRELOAD=x ls", "?? ro ask"),
    R("command eval ls", "ro ask"),
    R("\\rm x", "??"),
    R("r''m x", "??"),
    R("/bin/../bin/rm x", "??"),
    R("//usr/bin/git status", "ro"),
    R("/opt/homebrew/bin/rg foo", "ro"),
    R("/usr/local/bin/python3 -c x", "??"),
    R("/home/u/bin/ls", "??"),
    R("sed -i -e s/a/b/ f", "w", None, "f f-e"),
    R('sed "s/a/$(id)/" f', "?? ro"),
    R("git log --format=%H | xargs -n1 git show", "ro ro ??"),
    R("find . -print0 | xargs -0 grep -l foo", "ro ro ro"),
    R("ls | xargs -I % sh -c 'echo %'", "ro ro ?? ??"),
    R("xargs --replace=X mv X X.bak", "ro ??"),
    R("wait", "ro"),
    R("wait -p 'a[$(id)]'", "ask"),
    R("export -n FOO", "ro"),
    R("sed 'y/abc/xyz/' f", "ro", "f"),
    R("sed -n l f", "ro", "f"),
    R("sed -z 's/x/y/' f", "ro", "f"),
    R("awk -- '{print}' f", "ro", "f"),
    R("gawk -e 'BEGIN{print}'", "ro"),
    R("awk 'BEGIN { x = 4 / 2; y = x / 2; print y }'", "ro"),
    R("awk '{ print $1 / 2 }' f", "ro", "f"),
    R("awk '$0 ~ /[/]/' f", "??"),
    R("awk '{print \"a|b\"}' f", "ro", "f"),
    R("awk '# system(x)\n{print}' f", "??"),
    R("tar --to-command=x -tf a", "??"),
    R("tar tfC a.tar dir", "ro", "a.tar dir"),
    R("cat .*/passwd", "ro", ".*/passwd ../passwd"),
    R("cat src/.?/x", "ro", "src/.?/x src/../x"),
    R("cat .*.py", "ro", ".*.py"),
    R("cd .*", "ro", ".* .."),
    R('awk \'{print > "." "./../x"}\' f', "??"),
    R('awk \'BEGIN {getline x < "a" "b"}\'', "??"),
    R("awk 'BEGIN {while ((getline x < \"a\") > 0) n++}'", "ro", "a"),
    R("cp -b -S /../../x a b", "??"),
    R("cp -b --suffix=.orig a b", "w", "a", "b"),
    R("SIMPLE_BACKUP_SUFFIX=/../x cp -b a b", "ask"),
    R("xargs --process-slot-var=PATH grep x", "ask ro"),
    R("declare -a 'a=([$(id)]=1)'", "ask"),
    R("declare -A 'h=([$(id)]=1)'", "ask"),
    R("declare -a arr", "ro"),
]


@pytest.mark.parametrize("row", ROWS_MORE, ids=[r.cmd for r in ROWS_MORE])
def test_knowledge_more(row: Row) -> None:
    test_knowledge_table(row)


# --- SimpleCommands built by hand: what the parser hands over, one field at a time


def w(text: str, literal: bool = True, glob: bool = False, raw: str = "") -> Word:
    return Word(text, literal, glob, raw or text)


def cmd(*words: str | Word, **kw: object) -> SimpleCommand:
    built = tuple(x if isinstance(x, Word) else w(x) for x in words)
    return SimpleCommand(built, source=" ".join(x.text for x in built), **kw)  # type: ignore[arg-type]


def test_an_opaque_command_asks_with_the_parsers_reason() -> None:
    [j] = judge(cmd("ls", opaque=("the command name comes from a variable",)))
    assert j.ask == "the command name comes from a variable"
    assert not j.read_only


def test_a_command_name_known_only_at_run_time_asks() -> None:
    [j] = judge(cmd(w("$cmd", literal=False), "x"))
    assert j.ask is not None and "run time" in j.ask


def test_a_glob_as_command_name_asks() -> None:
    [j] = judge(cmd(w("/usr/bin/r*", glob=True), "x"))
    assert j.ask is not None


def test_leading_assignments() -> None:
    [j] = judge(cmd("ls", assignments=(("FOO", w("1")),)))
    assert j.read_only
    [j] = judge(cmd("ls", assignments=(("LD_PRELOAD", w("/tmp/x.so")),)))
    assert j.ask == "sets LD_PRELOAD, which changes what runs"
    [j] = judge(SimpleCommand((), (("PATH", w("/tmp")),)))
    assert j.argv == () and j.ask is not None
    [j] = judge(SimpleCommand((), (("x", w("$(rm y)", literal=False)),)))
    assert j.read_only  # the substitution is a separate command the parser emits


@pytest.mark.parametrize(
    ("op", "target", "fd", "reads", "writes", "asks"),
    [
        (">", "out", None, (), ("out",), False),
        (">>", "out", None, (), ("out",), False),
        (">|", "out", None, (), ("out",), False),
        ("&>", "out", None, (), ("out",), False),
        ("&>>", "out", None, (), ("out",), False),
        ("2>", "err", None, (), ("err",), False),
        (">", "err", 2, (), ("err",), False),
        (">&", "both", None, (), ("both",), False),
        (">&", "1", 2, (), (), False),
        ("<&", "-", None, (), (), False),
        ("<", "in", None, ("in",), (), False),
        ("<>", "f", None, ("f",), ("f",), False),
        (">", "/dev/null", None, (), (), False),
        (">", "/dev/stdout", None, (), (), False),
        (">", "/dev/fd/3", None, (), (), False),
        ("<", "/dev/null", None, (), (), False),
        ("<<<", "text", None, (), (), False),
    ],
)
def test_redirections(
    op: str,
    target: str,
    fd: int | None,
    reads: tuple[str, ...],
    writes: tuple[str, ...],
    asks: bool,
) -> None:
    [j] = judge(cmd("ls", redirects=(Redirect(op, w(target), fd),)))
    assert (set(j.reads), j.writes, j.ask is not None) == ({".", *reads}, writes, asks)


def test_a_redirection_to_a_path_known_only_at_run_time_asks() -> None:
    [j] = judge(cmd("ls", redirects=(Redirect(">", w("$out", literal=False)),)))
    assert j.ask == "redirects to a path known only at run time: $out"
    [j] = judge(cmd("ls", redirects=(Redirect(">", w("*.txt", glob=True)),)))
    assert j.ask is not None
    [j] = judge(cmd("ls", redirects=(Redirect("<<", None),)))
    assert j.read_only


def test_wrappers_by_hand() -> None:
    kinds = [kind(j) for j in judge(cmd("timeout", "5", "nice", "env", "FOO=1", "xargs", "rm"))]
    assert kinds == ["ro", "ro", "ro", "ro", "??"]
    argvs = [j.argv for j in judge(cmd("/usr/bin/timeout", "5", "/bin/rm", "-rf", "x"))]
    assert argvs == [("timeout", "5", "/bin/rm", "-rf", "x"), ("rm", "-rf", "x")]


def test_inner_commands_carry_the_outer_source() -> None:
    js = judge(cmd("timeout", "5", "rm", "x"))
    assert {j.source for j in js} == {"timeout 5 rm x"}


def test_nesting_has_a_limit() -> None:
    js = judge(cmd(*(["env"] * 40), "ls"))
    assert js[-1].ask == "commands nested too deeply to judge"


def test_judgement_fields_are_as_agreed() -> None:
    j = judge(cmd("cat", "a"))[0]
    assert (j.argv, j.effects_known, j.reads, j.writes, j.ask) == (
        ("cat", "a"),
        True,
        ("a",),
        (),
        None,
    )
    assert j.read_only and j.reason


# --- robustness: every known program with odd arguments answers, never raises

_ODD_ARGS = [
    (),
    ("-",),
    ("--",),
    ("-x",),
    ("--frobnicate",),
    ("--frobnicate=1",),
    ("-o",),
    ("a", "b", "c", "d"),
    ("-e",),
    ("{}", ";"),
    ("-c",),
    ("'",),
    ("-i",),
    ("[",),
]


def test_every_known_program_answers_odd_arguments() -> None:
    from tether.policy import knowledge

    names = sorted(knowledge._HANDLERS)  # the table, not a copy of it
    assert len(names) > 250
    for name in names:
        for args in _ODD_ARGS:
            for j in judge(cmd(name, *args)):
                assert "could not be judged" not in j.reason, (name, args, j.reason)
        for j in judge(cmd(name, w("$x", literal=False), w("*", glob=True))):
            assert "could not be judged" not in j.reason, (name, j.reason)


def test_judging_is_fast() -> None:
    from tether.policy.shellparse import parse

    typical = [
        parse(s).commands[0]
        for s in (
            "ls -la src",
            "grep -rn foo src",
            "git log --oneline -5",
            "sed -n '1,10p' f.py",
            "awk '{print $1}' f.txt",
            "find . -name '*.py' -exec grep -l foo {} +",
            "timeout 5 nice env FOO=1 xargs rm",
        )
    ]
    rounds = 200
    start = time.perf_counter()
    for _ in range(rounds):
        for c in typical:
            judge(c)
    per_command = (time.perf_counter() - start) / (rounds * len(typical))
    assert per_command < 0.0005, f"{per_command * 1e6:.0f} µs per command"
