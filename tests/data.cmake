# Data stage: shard format, manifest, packing, the MLM loader and `gmlp prepare`.
gmlp_add_test(NAME data_test
  SOURCES data_format_test.cc data_loader_test.cc data_prepare_test.cc
  LIBS gmlp::data GTest::gmock PkgConfig::ZSTD)
