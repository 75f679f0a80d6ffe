/**
 * @file main.cc
 * @brief The `uroce` command: show / clear the counters of running uroce programs, profiles,
 * environment checks, and the Prometheus exporter (docs/counters.md).
 *
 *   uroce show roce [--json] [--watch]          per device: config, PFC/ECN map, queues, counters
 *   uroce show counters [--device D] [--qp N]   every counter (ethtool / hw_counters names)
 *   uroce show qp                               every QP: state, type, peer, PSNs, DCQCN rate
 *   uroce clear counters [--device D]           zero point for `show` (exporter stays raw)
 *   uroce profile list | show NAME | apply NAME [--config FILE] | diff NAME [--config FILE]
 *   uroce doctor                                what is wrong on this host, and the fix
 *   uroce rdma-ns [-- PROGRAM ARGS...]          the kernel RDMA files UCX looks for
 *   uroce run [--config F] -- PROGRAM ARGS...   a program over uroce (library path, config,
 *                                               rdma-ns)
 *   uroce exporter --listen 127.0.0.1:9488      Prometheus /metrics
 *   uroce link add NAME netdev IF | del NAME | show [NAME]   devices on kernel netdevs
 *   uroce serve --listen ADDR:PORT [--token-file F] [--config F] [--name N]
 *                                               this host's node API (docs/fabric.md)
 *   uroce fabric apply PROFILE|FILE [--dry-run] | show roce | doctor   [--inventory F] [--json]
 *                                               every node of the fabric (docs/fabric.md)
 *   uroce fabric serve --listen A --state FILE  the desired state for zero-touch nodes
 */
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "capture.h"
#include "doctor.h"
#include "exporter.h"
#include "fabric_cmd.h"
#include "link_cmd.h"
#include "profile_cmd.h"
#include "rdma_ns.h"
#include "run_cmd.h"
#include "serve.h"
#include "show.h"

int main(int argc, char** argv) {
  using namespace uroce::tool;
  CLI::App app{"uroce: counters, profiles and checks for the uroce userspace RoCE stack"};
  app.require_subcommand(1);
  std::string run_dir;
  auto add_run_dir = [&](CLI::App* c) {
    c->add_option("--run-dir", run_dir,
                  "Folder of the statistics segments ($UROCE_RUN_DIR or /dev/shm)");
  };

  ShowOptions so;
  std::string qp_text;
  auto* show = app.add_subcommand("show", "Show state and counters of running programs");
  show->require_subcommand(1);
  auto add_common = [&](CLI::App* c) {
    c->add_option("--device,-d", so.device, "Only this device");
    c->add_option("--pid", so.pid, "Only this process");
    c->add_flag("--json", so.json, "JSON for scripts");
    c->add_flag("--watch,-w", so.watch, "Refresh until interrupted");
    c->add_option("--interval", so.interval_s, "Seconds between refreshes (--watch)");
    c->add_flag("--raw", so.raw, "Ignore the baseline of `uroce clear counters`");
    add_run_dir(c);
  };
  auto* roce = show->add_subcommand(
      "roce", "RoCE view per device: profile, lossless, maps, PFC, ECN, DCQCN, queues");
  add_common(roce);
  auto* counters = show->add_subcommand("counters", "Every counter of each device (or of one QP)");
  add_common(counters);
  counters->add_option("--qp", qp_text, "Only this QP number (decimal or 0x hex)");
  counters->add_flag("--all", so.all, "Also list per-priority counters that are zero");
  auto* qp = show->add_subcommand("qp", "Every QP: state, type, peer, PSNs, DCQCN rate");
  add_common(qp);

  auto* clear = app.add_subcommand("clear", "Clear counters");
  clear->require_subcommand(1);
  auto* clear_counters_cmd =
      clear->add_subcommand("counters", "Start `uroce show` counters from zero");
  clear_counters_cmd->add_option("--device,-d", so.device, "Only this device");
  clear_counters_cmd->add_option("--pid", so.pid, "Only this process");
  add_run_dir(clear_counters_cmd);

  ProfileOptions po;
  auto* profile =
      app.add_subcommand("profile", "Lossless/lossy/hpc/storage profiles for the config file");
  profile->require_subcommand(1);
  auto* plist = profile->add_subcommand("list", "List the profiles");
  auto* pshow = profile->add_subcommand("show", "Print the keys a profile writes");
  pshow->add_option("name", po.name, "Profile")->required();
  auto* papply = profile->add_subcommand(
      "apply", "Write a profile into the config file (atomically, with FILE.bak)");
  papply->add_option("name", po.name, "Profile")->required();
  papply->add_option("--config,-c", po.config,
                     "Config file (default: $UROCE_CONFIG, ./uroce.toml, /etc/uroce/uroce.toml)");
  papply->add_option("--device,-d", po.device, "Only this device (default: all)");
  auto* pdiff = profile->add_subcommand("diff", "What applying a profile would change");
  pdiff->add_option("name", po.name, "Profile")->required();
  pdiff->add_option("--config,-c", po.config, "Config file");
  pdiff->add_option("--device,-d", po.device, "Only this device");

  DoctorOptions dopt;
  auto* doctor_cmd = app.add_subcommand("doctor", "Check this host for what uroce needs");
  add_run_dir(doctor_cmd);
  doctor_cmd
      ->add_option("--meminfo", dopt.meminfo, "Hugepage counts from this file, not /proc/meminfo")
      ->group("");  // hidden: for tests
  doctor_cmd
      ->add_option("--ucx-module", dopt.ucx_ib_module,
                   "UCX's libuct_ib.so (the UCX check runs if present)")
      ->group("");  // hidden: for tests

  std::string listen = "127.0.0.1:9488";
  auto* exporter = app.add_subcommand("exporter", "Serve the counters to Prometheus");
  exporter->add_option("--listen,-l", listen, "host:port to listen on (port 0: any free port)");
  add_run_dir(exporter);

  ServeOptions svo;
  auto* serve_cmd = app.add_subcommand("serve", "This host's node API (docs/fabric.md)");
  serve_cmd->add_option("--listen,-l", svo.listen, "ADDR:PORT (port 0: any free port)")->required();
  serve_cmd->add_option("--token-file", svo.token_file,
                        "File (mode 0600) with the token writes need; without it, read-only");
  serve_cmd->add_option("--config", svo.config, "Configuration file (default: the lookup order)");
  serve_cmd->add_option("--name", svo.name, "The node's name (default: the host name)");
  serve_cmd->add_option("--desired", svo.desired,
                        "Zero-touch: follow the fabric's desired state at this URL");
  serve_cmd->add_option("--desired-every", svo.desired_every_ms,
                        "Milliseconds between two fetches of the desired state (default 5000)");
  serve_cmd->add_option("--run-dir", svo.run_dir,
                        "Folder of the statistics segments ($UROCE_RUN_DIR or /dev/shm)");

  FabricOptions fo;
  auto* fabric_cmd =
      app.add_subcommand("fabric", "Every host and switch of the fabric (docs/fabric.md)");
  fabric_cmd->require_subcommand(1);
  auto fabric_common = [&](CLI::App* c) {
    c->add_option("--inventory,-i", fo.inventory,
                  "Inventory file (default $UROCE_FABRIC or /etc/uroce/fabric.toml)");
    c->add_flag("--json", fo.json, "JSON for scripts");
  };
  auto* fapply = fabric_cmd->add_subcommand(
      "apply", "Make every node take a profile or a change file: every node or none");
  fapply->add_option("what", fo.what, "lossless, lossy, hpc, storage, or a change file (JSON)")
      ->required();
  fapply->add_flag("--dry-run", fo.dry_run, "Print what would change per node; change nothing");
  fabric_common(fapply);
  auto* fshow = fabric_cmd->add_subcommand("show", "One view of the fabric");
  fshow->require_subcommand(1);
  auto* fshow_roce =
      fshow->add_subcommand("roce", "Settings per node; pauses, marks, drops per port");
  fshow_roce->add_option("--interval", fo.interval_s,
                         "Seconds between the two samples the rates come from (0: totals)");
  fabric_common(fshow_roce);
  auto* fdoctor = fabric_cmd->add_subcommand("doctor", "The checks no single node can make");
  fdoctor->add_option("--interval", fo.interval_s,
                      "Seconds between the two samples the rates come from (0: totals)");
  fabric_common(fdoctor);
  auto* fprom = fabric_cmd->add_subcommand(
      "prometheus-config", "Write a Prometheus configuration and alerting rules for the fabric");
  fprom->add_option("--dir", fo.what, "Directory to write prometheus.yml and the rules into")
      ->required();
  fabric_common(fprom);
  FabricServeOptions fso;
  auto* fserve = fabric_cmd->add_subcommand(
      "serve", "Serve the fabric's desired state to zero-touch nodes and take their reports");
  fserve->add_option("--listen,-l", fso.listen, "ADDR:PORT (port 0: any free port)")->required();
  fserve->add_option("--state", fso.state, "The desired state (JSON, docs/fabric.md)")->required();
  fserve->add_option("--token-file", fso.token_file, "The token the nodes' reports carry");

  CaptureOptions co;
  auto* capture_cmd =
      app.add_subcommand("capture", "Write a running program's RoCE frames to a pcap");
  capture_cmd->add_option("--device,-d", co.device, "Device")->required();
  capture_cmd->add_option("--out,-o", co.out, "pcap file to write")->required();
  capture_cmd->add_option("--pid", co.pid, "The program (needed when several run the device)");
  capture_cmd->add_option("--count,-c", co.count, "Stop after this many frames");
  capture_cmd->add_option("--seconds", co.seconds, "Stop after this many seconds");
  add_run_dir(capture_cmd);

  RdmaNsOptions rno;
  auto* rdma_ns_cmd = app.add_subcommand(
      "rdma-ns",
      "The kernel RDMA files UCX needs to use uroce devices (/dev/infiniband/uverbsN, the GID "
      "types in /sys/class/infiniband): report them, or run a program (after --) in a private "
      "mount namespace where they exist");
  rdma_ns_cmd->add_option("program", rno.argv, "The program and its arguments, after --");

  RunOptions ro;
  auto* run_cmd = app.add_subcommand(
      "run",
      "Run a program (after --) over uroce: uroce's libibverbs.so.1 and librdmacm.so.1 first in "
      "LD_LIBRARY_PATH, UROCE_CONFIG, and the kernel RDMA files UCX reads (as rdma-ns)");
  run_cmd->add_option("--config,-c", ro.config,
                      "Config file, exported as UROCE_CONFIG (default: as programs find it)");
  run_cmd->add_option("program", ro.argv, "The program and its arguments, after --")->required();

  LinkOptions lo;
  std::string netdev_word;
  auto* link = app.add_subcommand(
      "link", "Devices bound to kernel netdevs (as `rdma link` for rxe): add, del, show");
  link->require_subcommand(1);
  auto* ladd = link->add_subcommand("add", "Bind a new device to a netdev: add NAME netdev IF");
  ladd->add_option("name", lo.name, "Device name, e.g. uroce0")->required();
  ladd->add_option("netdev", netdev_word, "The word \"netdev\"")
      ->required()
      ->check(CLI::IsMember({"netdev"}));
  ladd->add_option("ifname", lo.netdev, "The kernel interface, e.g. eth0")->required();
  ladd->add_flag("--exclusive", lo.exclusive,
                 "One process at a time opens the netdev itself (exclusive = true); no "
                 "uroce-hostd");
  auto* ldel = link->add_subcommand("del", "Remove a device from the configuration");
  ldel->add_option("name", lo.name, "Device name")->required();
  auto* lshow = link->add_subcommand("show", "The devices and their netdevs' state");
  lshow->add_option("name", lo.name, "Only this device");
  for (CLI::App* c : {ladd, ldel})
    c->add_option("--daemon", lo.daemon,
                  "How the netdev's uroce-hostd is started and stopped: auto (systemd's "
                  "uroce-hostd@IF.service where systemd runs, else a process of its own), "
                  "systemd, direct, none")
        ->check(CLI::IsMember({"auto", "systemd", "direct", "none"}));
  for (CLI::App* c : {ladd, ldel, lshow})
    c->add_option("--config,-c", lo.config,
                  "Config file (default: $UROCE_CONFIG, ./uroce.toml, /etc/uroce/uroce.toml)");

  CLI11_PARSE(app, argc, argv);
  co.run_dir = run_dir;
  so.run_dir = run_dir;
  dopt.run_dir = run_dir;
  if (!qp_text.empty()) {
    char* end = nullptr;
    long long v = std::strtoll(qp_text.c_str(), &end, 0);
    if (*end || v < 0 || v > 0xffffff) {
      std::fprintf(stderr, "uroce: --qp %s: not a QP number (0..0xffffff)\n", qp_text.c_str());
      return 2;
    }
    so.qp = v;
  }

  if (roce->parsed()) return show_roce(so);
  if (counters->parsed()) return show_counters(so);
  if (qp->parsed()) return show_qp(so);
  if (clear_counters_cmd->parsed()) return clear_counters(so);
  if (plist->parsed()) return profile_list();
  if (pshow->parsed()) return profile_show(po);
  if (papply->parsed()) return profile_apply(po);
  if (pdiff->parsed()) return profile_diff(po);
  if (doctor_cmd->parsed()) return doctor(dopt);
  if (exporter->parsed()) return uroce::exporter::run(listen, run_dir);
  if (serve_cmd->parsed()) return serve(svo);
  if (fapply->parsed()) return fabric_apply(fo);
  if (fshow_roce->parsed()) return fabric_show_roce(fo);
  if (fdoctor->parsed()) return fabric_doctor(fo);
  if (fserve->parsed()) return fabric_serve(fso);
  if (fprom->parsed()) return fabric_prometheus_config(fo);
  if (capture_cmd->parsed()) return capture(co);
  if (rdma_ns_cmd->parsed()) return rdma_ns(rno);
  if (run_cmd->parsed()) return run(ro);
  if (ladd->parsed()) return link_add(lo);
  if (ldel->parsed()) return link_del(lo);
  if (lshow->parsed()) return link_show(lo);
  return 2;
}
