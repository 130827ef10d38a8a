// A minimal CmdStan stand-in: runs Stan's own `variational` (ADVI) and `pathfinder` services
// on a model compiled by stanc, writing the CSV rows those services write. Built by
// `build.sh` against the Stan headers and TBB that the `httpstan` wheel ships and run by
// `compare_means.py`, so that hazel's ADVI and Pathfinder can be compared with Stan's on the
// same models without a CmdStan installation.
//
//   stan_methods METHOD DATA.json SEED OUT.csv [key=value ...]
//   METHOD: meanfield | fullrank | pathfinder
//   keys (CmdStan's names and defaults): iter tol_rel_obj eta adapt_engaged eval_elbo
//   output_samples grad_samples elbo_samples num_paths num_draws num_psis_draws
//   history_size max_lbfgs_iters num_elbo_draws init_radius
#include <stan/callbacks/interrupt.hpp>
#include <stan/callbacks/stream_logger.hpp>
#include <stan/callbacks/stream_writer.hpp>
#include <stan/callbacks/structured_writer.hpp>
#include <stan/callbacks/unique_stream_writer.hpp>
#include <stan/callbacks/writer.hpp>
#include <stan/io/empty_var_context.hpp>
#include <stan/io/json/json_data.hpp>
#include <stan/model/model_base.hpp>
#include <stan/services/experimental/advi/fullrank.hpp>
#include <stan/services/experimental/advi/meanfield.hpp>
#include <stan/services/pathfinder/multi.hpp>
#include <stan/services/pathfinder/single.hpp>

#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

stan::model::model_base& new_model(stan::io::var_context& data_context,
                                   unsigned int seed, std::ostream* msg_stream);

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: stan_methods METHOD DATA.json SEED OUT.csv [key=value ...]\n";
    return 2;
  }
  const std::string method = argv[1];
  const unsigned int seed = std::stoul(argv[3]);
  std::map<std::string, double> opt = {
      {"iter", 10000},         {"tol_rel_obj", 0.01},  {"eta", 1.0},
      {"adapt_engaged", 1},    {"adapt_iter", 50},     {"eval_elbo", 100},
      {"output_samples", 1000}, {"grad_samples", 1},   {"elbo_samples", 100},
      {"num_paths", 4},        {"num_draws", 1000},    {"num_psis_draws", 1000},
      {"history_size", 5},     {"max_lbfgs_iters", 1000}, {"num_elbo_draws", 25},
      {"init_radius", 2.0},    {"init_alpha", 0.001},  {"tol_obj", 1e-12},
      {"tol_rel_obj_lbfgs", 1e4}, {"tol_grad", 1e-8}, {"tol_rel_grad", 1e7},
      {"tol_param", 1e-8}};
  for (int i = 5; i < argc; ++i) {
    std::string kv = argv[i];
    auto eq = kv.find('=');
    if (eq == std::string::npos || !opt.count(kv.substr(0, eq))) {
      std::cerr << "unknown option " << kv << "\n";
      return 2;
    }
    opt[kv.substr(0, eq)] = std::stod(kv.substr(eq + 1));
  }
  std::ifstream data_stream(argv[2]);
  stan::json::json_data data(data_stream);
  stan::model::model_base& model = new_model(data, seed, &std::cerr);

  auto out = std::make_unique<std::ofstream>(argv[4]);
  out->precision(17);
  stan::callbacks::unique_stream_writer<std::ofstream> parameter_writer(
      std::move(out), "# ");
  stan::callbacks::writer null_writer;
  stan::callbacks::stream_logger logger(std::cerr, std::cerr, std::cerr,
                                        std::cerr, std::cerr);
  stan::callbacks::interrupt interrupt;
  stan::io::empty_var_context init;
  int rc = 0;
  if (method == "meanfield" || method == "fullrank") {
    auto run = method == "meanfield"
                   ? &stan::services::experimental::advi::meanfield<stan::model::model_base>
                   : &stan::services::experimental::advi::fullrank<stan::model::model_base>;
    rc = run(model, init, seed, 1, opt["init_radius"], opt["grad_samples"],
             opt["elbo_samples"], opt["iter"], opt["tol_rel_obj"], opt["eta"],
             opt["adapt_engaged"] != 0, opt["adapt_iter"], opt["eval_elbo"],
             opt["output_samples"], interrupt, logger, null_writer,
             parameter_writer, null_writer);
  } else if (method == "pathfinder") {
    const int paths = opt["num_paths"];
    std::vector<std::shared_ptr<stan::io::var_context>> inits;
    std::vector<stan::callbacks::writer> init_writers(paths);
    std::vector<stan::callbacks::writer> single_writers(paths);
    std::vector<stan::callbacks::structured_writer> single_diagnostics(paths);
    for (int k = 0; k < paths; ++k)
      inits.push_back(std::make_shared<stan::io::empty_var_context>());
    stan::callbacks::structured_writer diagnostics;
    rc = stan::services::pathfinder::pathfinder_lbfgs_multi(
        model, inits, seed, 1, opt["init_radius"], opt["history_size"],
        opt["init_alpha"], opt["tol_obj"], opt["tol_rel_obj_lbfgs"],
        opt["tol_grad"], opt["tol_rel_grad"], opt["tol_param"],
        opt["max_lbfgs_iters"], opt["num_elbo_draws"], opt["num_draws"],
        opt["num_psis_draws"], paths, false, 0, interrupt, logger,
        init_writers, single_writers, single_diagnostics, parameter_writer,
        diagnostics, true, true);
  } else {
    std::cerr << "unknown method " << method << "\n";
    return 2;
  }
  return rc;
}
