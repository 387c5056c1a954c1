#!/bin/sh
# Entrypoint of the ReasonLab images (docker/Dockerfile.api, docker/Dockerfile.worker); runs "$@" after:
#
# - `reasonlab api ...`: brings the database to the migration head first (`reasonlab migrate`), so the
#   API only starts on a migrated schema. REASONLAB_MIGRATE_ON_START=0 skips it.
# - REASONLAB_GPU_LOCK_DIR set and CUDA_VISIBLE_DEVICES unset (the gpu worker service): claims one GPU
#   of the host that no other worker container holds, and exports CUDA_VISIBLE_DEVICES=<its UUID>.
#   Docker gives every replica of `docker compose up --scale worker=N` the same devices, so the
#   replicas share a lock folder (a volume) and each takes the first GPU whose lock file it can flock.
#   The lock lives as long as this container's process: fd 9 is inherited by the exec'd worker, and
#   a dead or stopped container releases it. Set CUDA_VISIBLE_DEVICES yourself to pin a GPU instead.
set -eu

log() { echo "reasonlab-entrypoint: $*" >&2; }

if [ "${1:-}" = reasonlab ] && [ "${2:-}" = api ] && [ "${REASONLAB_MIGRATE_ON_START:-1}" = 1 ]; then
    log "migrating the database"
    reasonlab migrate
fi

if [ -n "${REASONLAB_GPU_LOCK_DIR:-}" ] && [ -z "${CUDA_VISIBLE_DEVICES:-}" ]; then
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        log "this gpu worker sees no GPU (no nvidia-smi in the container): install the NVIDIA Container" \
            "Toolkit on the host and give the service a GPU reservation, or run the cpu worker instead"
        exit 1
    fi
    uuids=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | tr -d '\r')
    if [ -z "$uuids" ]; then
        log "nvidia-smi lists no GPU in this container"
        exit 1
    fi
    mkdir -p "$REASONLAB_GPU_LOCK_DIR"
    claimed=""
    for uuid in $uuids; do
        exec 9>"$REASONLAB_GPU_LOCK_DIR/$uuid.lock"
        if flock -n 9; then
            claimed=$uuid
            break
        fi
        exec 9>&-
    done
    if [ -z "$claimed" ]; then
        log "every GPU of this host ($(echo "$uuids" | wc -w)) already has a worker: scale the gpu worker" \
            "service to at most that many replicas"
        sleep "${REASONLAB_GPU_RETRY_SECONDS:-30}"  # restart: unless-stopped tries again after this
        exit 1
    fi
    export CUDA_VISIBLE_DEVICES="$claimed"
    log "this worker owns GPU $claimed"
fi

exec "$@"
