/**
 * @file fabric_cmd.h
 * @brief `uroce fabric apply | show roce | doctor` (docs/fabric.md): every node of the
 * inventory through its node API, the requests of one step all at once.
 *
 *   apply PROFILE|FILE [--dry-run]  lib/fabric/apply.h: every node or none; exit 0 when every
 *                                   node has the change (or would, dry run), 1 otherwise
 *   show roce [--interval S]        settings per node, rates per port worst first (two samples
 *                                   S seconds apart; 0: one sample, totals); exit 1 when a
 *                                   node did not answer
 *   doctor [--interval S]           lib/fabric/doctor.h; exit 1 when an error is found
 *   prometheus-config --dir DIR     DIR/prometheus.yml (a scrape job of every node's GET
 *                                   /metrics, labels node and role) and
 *                                   DIR/uroce-fabric-rules.yml (the fabric's alerts)
 *   serve --listen A --state FILE   the desired state for zero-touch nodes (lib/fabric/
 *                                   desired.h): GET /v1/desired (FILE as it is now, once it
 *                                   validates), POST /v1/report (the nodes' reports, with the
 *                                   token), GET /v1/nodes (who reported, in sync or not)
 *
 * Inventory: --inventory FILE, else $UROCE_FABRIC, else /etc/uroce/fabric.toml. --json prints
 * JSON. A bad inventory, token file or change file: one line on stderr, exit 2.
 */
#pragma once

#include <string>

namespace uroce::tool {

struct FabricOptions {
  std::string inventory;
  std::string what;  ///< apply: a profile name or a change file (JSON)
  bool dry_run = false;
  bool json = false;
  double interval_s = 1.0;
};

int fabric_apply(const FabricOptions& o);
int fabric_show_roce(const FabricOptions& o);
int fabric_doctor(const FabricOptions& o);
/// o.what: the directory to write into.
int fabric_prometheus_config(const FabricOptions& o);

struct FabricServeOptions {
  std::string listen;
  std::string state;       ///< the desired state's file (JSON)
  std::string token_file;  ///< reports need its token; empty: reports refused
};
int fabric_serve(const FabricServeOptions& o);

}  // namespace uroce::tool
