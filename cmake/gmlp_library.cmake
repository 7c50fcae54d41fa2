# gmlp_library(<stage> SOURCES a.cc ... DEPS dep ... [TORCH]): the library of one stage folder,
# gmlp_<stage> with its alias gmlp::<stage>, the repository root on its public include path, its
# public dependencies and, with TORCH, LibTorch (gmlp_torch) and the shared precompiled header.
function(gmlp_library stage)
  cmake_parse_arguments(L "TORCH" "" "SOURCES;DEPS" ${ARGN})
  add_library(gmlp_${stage} ${L_SOURCES})
  add_library(gmlp::${stage} ALIAS gmlp_${stage})
  target_include_directories(gmlp_${stage} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(gmlp_${stage} PUBLIC ${L_DEPS})
  if(L_TORCH)
    target_link_libraries(gmlp_${stage} PUBLIC gmlp_torch)
    gmlp_use_torch_pch(gmlp_${stage})
  endif()
endfunction()
