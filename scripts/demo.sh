#!/usr/bin/env bash
# make run: the main job, end to end, on the embedded default (the local outbox).
# A real training script fails for real (its checkpoint write hits a full device);
# gpualert keeps the log, names the cause, and leaves the email in the outbox.
set -euo pipefail
bin=${1:-build/gpualert}
root=$(cd "$(dirname "$0")/.." && pwd)
demo=$root/build/demo
rm -rf "$demo"
mkdir -p "$demo"
export GPUALERT_STATE_DIR=$demo/state GPUALERT_LOG_DIR=$demo/logs
unset GPUALERT_SMTP_URL GPUALERT_WEBHOOK_URL GPUALERT_CONFIG PYTHONUNBUFFERED
export XDG_CONFIG_HOME=$demo/config  # no user config: the embedded default

echo "\$ gpualert run --name demo-train -- python3 scripts/demo_train.py /dev/full"
set +e
"$bin" run --name demo-train -- /usr/bin/python3 "$root/scripts/demo_train.py" /dev/full
status=$?
set -e
echo "(gpualert exited with $status, exactly as the job did)"
echo
echo "\$ gpualert outbox list"
"$bin" outbox list
echo
message=$(ls "$GPUALERT_STATE_DIR"/outbox/new/*.eml | head -1)
echo "--- the message waiting in $message (text part) ---"
/usr/bin/python3 - "$message" <<'PY'
import email, email.policy, sys
msg = email.message_from_binary_file(open(sys.argv[1], "rb"), policy=email.policy.default)
print("Subject:", msg["Subject"])
print("To:", msg["To"])
print()
print(msg.get_body(preferencelist=("plain",)).get_content())
print("Attachments:", ", ".join(p.get_filename() or "?" for p in msg.iter_attachments()))
PY
echo "--- end of message ---"
echo "To deliver it: set GPUALERT_SMTP_URL and GPUALERT_TO, then run: $bin outbox flush"
