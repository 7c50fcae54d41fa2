// What made an output: the gmlp version (git at build time, "-dirty" when the tree had
// uncommitted changes), the LibTorch version, the device (the CPU's model and whether it has
// native bf16 arithmetic, or the GPU's name), threads and world size, and the date. Every output
// a user keeps records it: a checkpoint's config.json, metrics.jsonl's first line, an export's
// config.json and model card, study.json and report.md.
#ifndef GMLP_MODEL_PROVENANCE_H_
#define GMLP_MODEL_PROVENANCE_H_

#include <torch/torch.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace gmlp::model {

// The JSON key outputs keep it under.
inline constexpr char kMadeByKey[] = "made_by";

// The environment variables that make ATen, OpenBLAS, oneDNN or MKL use fewer instruction sets
// than the CPU has (to compare kernels, or to stand in for an older CPU): where one is set, it
// is part of what made an output.
inline constexpr const char* kInstructionSetCaps[] = {"ATEN_CPU_CAPABILITY", "OPENBLAS_CORETYPE",
                                                      "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA",
                                                      "MKL_ENABLE_INSTRUCTIONS"};

// "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz (2 cores; AVX-512 BF16, AMX)", or with
// "bf16 emulated: no AVX-512 BF16 or AMX"; from /proc/cpuinfo. Any kInstructionSetCaps set
// follow: "(2 cores; AVX-512 BF16; instruction sets capped by OPENBLAS_CORETYPE=Haswell)".
std::string CpuDescription();

// {"gmlp", "libtorch", "device", "threads", "world_size", "date"}: `device` is where the work
// ran (a CUDA device is named, "cuda:0: NVIDIA H200"; the CPU is described either way, under
// "cpu"), `threads` LibTorch's intra-op threads.
nlohmann::ordered_json Provenance(const torch::Device& device = torch::kCPU,
                                  int64_t world_size = 1);

// One line for people: "gmlp 0.1.0+g1234abcd, LibTorch 1.13.0, cpu (Intel ...; AVX-512 BF16),
// 2 threads x 1 rank, 2026-12-05T08:00:00Z".
std::string ProvenanceLine(const nlohmann::ordered_json& made_by);

}  // namespace gmlp::model

#endif  // GMLP_MODEL_PROVENANCE_H_
