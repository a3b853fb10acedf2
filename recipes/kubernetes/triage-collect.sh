#!/bin/sh
# triage-collect.sh JOB: wait for the Kubernetes Job JOB to finish, then diagnose each of its pods
# (one pod = one attempt: the Job's restartPolicy is Never, so a retry is a new pod) with
# `kubectl logs --all-containers --prefix | triage analyze`, recorded in TRIAGE_DB as
# (NAMESPACE/JOB, attempt N), the pods in creation order.  Never fails (exit 0): a store that is
# down is a warning.  Env: POD_NAMESPACE (the downward API), TRIAGE_DB (a Secret), TRIAGE_WAIT_S
# (default 86400), TRIAGE_TIMEOUT_S (per pod, default 120).  See recipes/kubernetes/README.md.
JOB=${1:?usage: triage-collect.sh JOB}
NS=${POD_NAMESPACE:-default}
WAIT_S=${TRIAGE_WAIT_S:-86400}
T=${TRIAGE_TIMEOUT_S:-120}
waited=0
while :; do
    # the Job's finished conditions (batch/v1 JobCondition types Complete, Failed)
    state=$(kubectl get job "$JOB" -n "$NS" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}')
    case " $state " in *" Complete "*|*" Failed "*) break ;; esac
    if [ "$waited" -ge "$WAIT_S" ]; then
        echo "triage-collect: job $NS/$JOB not finished after ${WAIT_S}s; diagnosing its pods as they are" >&2
        break
    fi
    sleep 10; waited=$((waited + 10))
done
# the Job's pods by the label the Job controller sets (batch.kubernetes.io/job-name, Kubernetes >= 1.27)
kubectl get pods -n "$NS" -l "batch.kubernetes.io/job-name=$JOB" --sort-by=.metadata.creationTimestamp \
    -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' > /tmp/pods || true
attempt=0
while read -r pod; do
    [ -n "$pod" ] || continue
    kubectl logs -n "$NS" "pod/$pod" --all-containers --prefix |
        timeout "$T" triage analyze --job-id "$NS/$JOB" --attempt "$attempt" --record --exit-zero -q
    attempt=$((attempt + 1))
done < /tmp/pods
exit 0
