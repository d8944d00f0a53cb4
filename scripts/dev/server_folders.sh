#!/usr/bin/env bash
# server/ in folders (issue 29): the path mapping of the move, and a fixer for references.
#   scripts/dev/server_folders.sh map            prints "old new" per line
#   scripts/dev/server_folders.sh move           git mv every file (run once, from the repo root)
#   scripts/dev/server_folders.sh fix [FILE...]  rewrites "server/<old>" into "server/<new>" in
#                                                the files (default: every tracked file but this
#                                                one); idempotent, for code merged after the move
# Folders and their CMake targets (server/<folder>/CMakeLists.txt):
#   core/      accel_server_core       registry, scheduler, event log, state store, job manager
#   launchers/ accel_server_launchers  local supervisor, slurm, kubernetes
#   services/  accel_server_services   the gRPC faces, proto conversions, token file
#   http/      accel_server_http       HTTP front, /metrics, dashboard and its API, web/
#   (server/)  accel_server, acceld    the daemon object, its flags, main: left at the top, so
#                                      the binary stays build/server/acceld
# Dependencies: core <- launchers; core <- services <- http (http reads services' proto
# conversions and RPC counters); accel_server (acceld) links them all.
set -euo pipefail

MAP='
core types.h types.cc state_store.h state_store.cc state_store_load.cc state_store_records.cc
core sqlite_stmt.h state_store_test.cc state_store_damage_test.cc state_store_test_util.h
core retention.h retention.cc retention_test.cc event_log.h event_log.cc event_log_test.cc
core job_registry.h job_registry.cc job_registry_test.cc scheduler.h scheduler.cc scheduler_test.cc
core job_manager.h job_manager.cc job_placement.h job_placement.cc worker_table.h worker_table.cc
core gang_lifecycle.h gang_lifecycle.cc gang_launch.cc gang_endings.cc gang_runner.h gang_runner.cc
core job_manager_test.cc job_manager_resources_test.cc job_manager_launchers_test.cc
core job_manager_locks_test.cc job_manager_test_fixture.h checkpoint_dirs.h checkpoint_dirs.cc
core checkpoint_dirs_test.cc gpus.h gpus.cc wall_clock.h same_secret.h test_util.h
launchers supervisor.h supervisor.cc supervisor_test.cc command.h command.cc log_tail.h log_tail.cc
launchers slurm_script.h slurm_script.cc slurm_script_test.cc slurm_launcher.h slurm_launcher.cc
launchers slurm_launcher_test.cc kubernetes_api.h kubernetes_api.cc kubernetes_launcher.h
launchers kubernetes_launcher.cc kubernetes_launcher_test.cc kubernetes_manifests.h
launchers kubernetes_manifests.cc kubernetes_manifests_test.cc kubernetes_fake_api.h
launchers kubernetes_test_util.h testdata
services services.h services.cc services_test.cc services_submit_test.cc services_files_test.cc
services services_test_fixture.h convert.h convert.cc rpc_metrics.h rpc_metrics.cc tls_test.cc
services token_file.h token_file.cc token_file_test.cc
http http_server.h http_server.cc http_server_test.cc http_front.h http_front.cc http_front_test.cc
http http_handler_pool.h http_handler_pool.cc http_request.h http_request.cc http_request_test.cc
http http_routes.h http_routes.cc prometheus_text.h prometheus_text.cc metrics_page.h
http metrics_page.cc metrics_page_test.cc metrics_fixture.h dashboard.h dashboard.cc
http dashboard_api.h dashboard_api.cc dashboard_api_test.cc dashboard_test_util.h
http job_telemetry.h job_telemetry.cc web_assets.h web
'

map() {
  echo "$MAP" | while read -r folder files; do
    [ -n "$folder" ] || continue
    for f in $files; do echo "server/$f server/$folder/$f"; done
  done
}

case "${1:-}" in
  map) map ;;
  move)
    map | while read -r old new; do
      if [ -e "$old" ]; then mkdir -p "$(dirname "$new")"; git mv "$old" "$new"; fi
    done ;;
  fix)
    shift
    if [ $# -eq 0 ]; then
      mapfile -t files < <(git ls-files | grep -v '^scripts/dev/server_folders.sh$' |
                           grep -Ev '\.(png|jpg|ico|db|bin|safetensors)$')
    else
      files=("$@")
    fi
    # One perl program: every old path, not preceded by a path or word character, not followed
    # by one (so server/core/types.h and server/types.hpp are left alone).
    prog=$(map | while read -r old new; do
      printf 's{(?<![\\w./-])\\Q%s\\E(?!\\w|\.\\w)}{%s}g;\n' "$old" "$new"
    done)
    for f in "${files[@]}"; do
      [ -f "$f" ] || continue
      grep -q 'server/' "$f" 2>/dev/null || continue
      perl -pi -e "$prog" "$f"
    done ;;
  *) sed -n '2,16p' "$0"; exit 2 ;;
esac
