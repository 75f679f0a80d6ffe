/**
 * @file serve.h
 * @brief `uroce serve`: a host's node API (docs/fabric.md, lib/fabric/node_api.h). The settings
 * are the configuration file's (every device's; the first device's are reported, a device
 * that differs is listed as drift in the state); a write rewrites the file atomically (the old
 * text kept as FILE.bak) and takes effect for programs that open a device afterwards. The state
 * is `uroce show roce --json` of the running programs. With --desired URL the host follows the
 * fabric's desired state (zero-touch): fetched at start and every period, applied, reported.
 * Runs until SIGINT/SIGTERM.
 */
#pragma once

#include <cstdint>
#include <string>

namespace uroce::tool {

struct ServeOptions {
  std::string listen;      ///< ADDR:PORT
  std::string token_file;  ///< empty: read-only
  std::string config;      ///< empty: $UROCE_CONFIG, ./uroce.toml, /etc/uroce/uroce.toml
  std::string name;        ///< empty: the host name
  std::string run_dir;     ///< statistics segments; empty: $UROCE_RUN_DIR or /dev/shm
  std::string desired;     ///< zero-touch: the desired state's URL (lib/fabric/desired.h)
  uint32_t desired_every_ms = 5000;
};

/// @return the exit status: 0 after a signal, 1 when the API cannot start, 2 on a bad token file.
int serve(const ServeOptions& o);

}  // namespace uroce::tool
