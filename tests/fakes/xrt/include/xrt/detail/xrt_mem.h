// Test double of XRT's xrt/detail/xrt_mem.h: the sync directions.
#ifndef IRONTUNE_FAKE_XRT_DETAIL_XRT_MEM_H_
#define IRONTUNE_FAKE_XRT_DETAIL_XRT_MEM_H_

enum xclBOSyncDirection {
  XCL_BO_SYNC_BO_TO_DEVICE = 0,
  XCL_BO_SYNC_BO_FROM_DEVICE,
  XCL_BO_SYNC_BO_GMIO_TO_AIE,
  XCL_BO_SYNC_BO_AIE_TO_GMIO,
};

#endif  // IRONTUNE_FAKE_XRT_DETAIL_XRT_MEM_H_
