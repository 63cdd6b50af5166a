"""kornia: differentiable augmentation and classical vision on CUDA tensors, the way its tutorials
use it (no weights downloaded: learned modules are built with pretrained=False): a training loop
with an AugmentationSequential of many augmentations on images, masks, boxes and keypoints
(forward and inverse), the auto-augment policies, a sweep of every 2D and 3D augmentation and
the containers, then filters, colour, enhancement, morphology, geometry (warps, homography with
RANSAC, pyramids, camera/epipolar helpers), local features and matching, losses and metrics,
and contrib (connected components, k-means, patches, distance transform)."""

import os

import torch
import torch.nn.functional as F

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import kornia

    return os.path.dirname(os.path.realpath(kornia.__file__))


def _imgs(ctx, b=4, c=3, h=64, w=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, c, h, w, generator=g).to(ctx.device)


@scenario
def augment_train(ctx):
    """A small CNN trained on GPU batches that pass through an AugmentationSequential (flip, affine,
    perspective, resized crop, colour jiggle, blur, noise, erasing) with data_keys input/mask/bbox_xyxy/
    keypoints, same_on_batch on and off, the inverse of the geometric part, then RandomMixUpV2 and
    RandomCutMixV2 on the labels, Normalize/Denormalize; the loss is cross-entropy on the mixed labels."""
    import kornia.augmentation as K

    def run():
        torch.manual_seed(0)
        aug = K.AugmentationSequential(
            K.RandomHorizontalFlip(p=0.5), K.RandomAffine(degrees=15, translate=(0.1, 0.1), scale=(0.9, 1.1), p=0.8),
            K.RandomPerspective(0.2, p=0.5), K.RandomResizedCrop((48, 48), scale=(0.6, 1.0)),
            K.ColorJiggle(0.2, 0.2, 0.2, 0.05, p=0.8), K.RandomGaussianBlur((3, 3), (0.1, 1.5), p=0.3),
            K.RandomGaussianNoise(std=0.02, p=0.3), K.RandomErasing(p=0.3),
            data_keys=["input", "mask", "bbox_xyxy", "keypoints"], same_on_batch=False)
        geo = K.AugmentationSequential(K.RandomAffine(20, p=1.0), K.RandomHorizontalFlip(p=1.0),
                                       data_keys=["input"], same_on_batch=True)
        mix = [K.RandomMixUpV2(data_keys=["input", "class"]), K.RandomCutMixV2(data_keys=["input", "class"])]
        norm = K.Normalize(mean=torch.tensor([0.5, 0.5, 0.5]), std=torch.tensor([0.25, 0.25, 0.25]))
        denorm = K.Denormalize(mean=torch.tensor([0.5, 0.5, 0.5]), std=torch.tensor([0.25, 0.25, 0.25]))
        net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                  torch.nn.Flatten(), torch.nn.Linear(16, 5)).to(ctx.device)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for step in range(4):
            x = _imgs(ctx, seed=step)
            mask = (torch.rand(4, 1, 64, 64, device=ctx.device) > 0.5).float()
            boxes = torch.tensor([[[8.0, 8.0, 30.0, 40.0]]] * 4, device=ctx.device)
            kps = torch.tensor([[[10.0, 12.0], [40.0, 33.0]]] * 4, device=ctx.device)
            y = torch.randint(0, 5, (4,), device=ctx.device)
            xa, ma, ba, ka = aug(x, mask, boxes, kps)
            xg = geo(x)
            geo.inverse(xg)
            xm, ym = mix[step % 2](xa, y)
            logits = net(norm(xm))
            ym = ym.squeeze(0) if ym.dim() == 3 else ym
            if ym.dim() == 2 and ym.size(-1) >= 3:
                loss = ((1 - ym[:, 2]) * F.cross_entropy(logits, ym[:, 0].long(), reduction="none")
                        + ym[:, 2] * F.cross_entropy(logits, ym[:, 1].long(), reduction="none")).mean()
            else:
                loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            denorm(norm(xa))
    return run


AUG2D = [
    ("RandomHorizontalFlip", {}), ("RandomVerticalFlip", {}), ("RandomAffine", {"degrees": 30, "shear": 10}),
    ("RandomRotation", {"degrees": 45.0}), ("RandomPerspective", {"distortion_scale": 0.4}),
    ("RandomResizedCrop", {"size": (32, 32)}), ("RandomCrop", {"size": (40, 40), "padding": 4}),
    ("CenterCrop", {"size": 40}), ("ColorJitter", {"brightness": 0.2, "contrast": 0.2, "saturation": 0.2, "hue": 0.1}),
    ("ColorJiggle", {"brightness": 0.2, "contrast": 0.2, "saturation": 0.2, "hue": 0.1}), ("RandomGrayscale", {}),
    ("RandomGaussianBlur", {"kernel_size": (5, 5), "sigma": (0.1, 2.0)}), ("RandomGaussianNoise", {"std": 0.05}),
    ("RandomErasing", {}), ("RandomSolarize", {}), ("RandomPosterize", {}), ("RandomSharpness", {}),
    ("RandomEqualize", {}), ("RandomInvert", {}), ("RandomBrightness", {}), ("RandomContrast", {}),
    ("RandomHue", {}), ("RandomSaturation", {}), ("RandomGamma", {}), ("RandomAutoContrast", {}),
    ("RandomChannelShuffle", {}), ("RandomThinPlateSpline", {}), ("RandomElasticTransform", {}),
    ("RandomMotionBlur", {"kernel_size": 5, "angle": 30.0, "direction": 0.5}), ("RandomPlanckianJitter", {}),
    ("RandomRGBShift", {}), ("RandomBoxBlur", {}), ("RandomMedianBlur", {}), ("RandomPlasmaShadow", {}),
    ("RandomRain", {"drop_height": (2, 4), "drop_width": (1, 2)}), ("RandomSnow", {}),
    ("RandomLinearIllumination", {}), ("RandomClahe", {}), ("RandomSaltAndPepperNoise", {}),
    ("RandomChannelDropout", {}), ("RandomJigsaw", {"grid": (2, 2)}), ("Resize", {"size": (32, 48)}),
    ("LongestMaxSize", {"max_size": 48}), ("SmallestMaxSize", {"max_size": 48}), ("PadTo", {"size": (72, 72)}),
]


@scenario
def augment_zoo(ctx):
    """Each 2D augmentation with p=1 on a batch on the device (forward, params replay via ``params=``,
    inverse where geometric), the mosaic and transplantation mixes (RandomDissolving is left out: it loads a
    Stable Diffusion model), the auto-augment policies (AutoAugment
    imagenet/cifar10, RandAugment, TrivialAugment), the containers (ImageSequential with random_apply,
    PatchSequential, VideoSequential on 5-D video) and the 3D augmentations on volumes."""
    import kornia.augmentation as K
    from kornia.augmentation.auto import AutoAugment, RandAugment, TrivialAugment

    def run():
        torch.manual_seed(0)
        x = _imgs(ctx)
        failed = {}
        for name, kw in AUG2D:
            try:
                aug = getattr(K, name)(p=1.0, **kw) if name not in ("Resize", "LongestMaxSize", "SmallestMaxSize",
                                                                    "PadTo", "CenterCrop") else getattr(K, name)(**kw)
                out = aug(x)
                if getattr(aug, "_params", None) is not None:
                    aug(x, params=aug._params)
                if isinstance(aug, K.GeometricAugmentationBase2D):
                    aug.inverse(out)
            except Exception as exc:  # noqa: BLE001
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]

        def go(name, fn):
            try:
                fn()
            except Exception as exc:  # noqa: BLE001
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]

        go("mosaic", lambda: K.RandomMosaic((32, 32), data_keys=["input", "bbox_xyxy"])(
            x, torch.tensor([[[4.0, 4.0, 20.0, 20.0]]] * 4, device=ctx.device)))
        go("transplantation", lambda: K.RandomTransplantation(p=1.0)(
            x, torch.randint(0, 3, (4, 64, 64), device=ctx.device)))
        for pol in (AutoAugment("imagenet"), AutoAugment("cifar10"), RandAugment(n=2, m=10), TrivialAugment()):
            go(type(pol).__name__, lambda pol=pol: pol(x))
        go("image_sequential", lambda: K.ImageSequential(K.ColorJiggle(0.1, 0.1, 0.1, 0.1, p=1.0),
                                                         K.RandomAffine(10, p=1.0), K.RandomGrayscale(p=0.5),
                                                         random_apply=2)(x))
        go("patch_sequential", lambda: K.PatchSequential(K.ColorJiggle(0.1, 0.1, 0.1, 0.1, p=0.8),
                                                         K.RandomAffine(10, p=1.0), grid_size=(2, 2),
                                                         patchwise_apply=False, same_on_batch=False)(x))
        go("video_sequential", lambda: K.VideoSequential(K.ColorJiggle(0.1, 0.1, 0.1, 0.1, p=1.0),
                                                         K.RandomAffine(10, p=1.0), data_format="BCTHW",
                                                         same_on_frame=True)(torch.rand(2, 3, 4, 32, 32,
                                                                                        device=ctx.device)))
        vol = torch.rand(2, 1, 8, 16, 16, device=ctx.device)
        for name in ("RandomAffine3D", "RandomRotation3D", "RandomHorizontalFlip3D", "RandomMotionBlur3D",
                     "RandomCrop3D"):
            kw = {"RandomAffine3D": {"degrees": 15}, "RandomRotation3D": {"degrees": 15},
                  "RandomMotionBlur3D": {"kernel_size": 3, "angle": 15.0, "direction": 0.5},
                  "RandomCrop3D": {"size": (4, 8, 8)}}.get(name, {})
            go(name, lambda name=name, kw=kw: getattr(K, name)(p=1.0, **kw)(vol))
        if failed:
            print("augmentations that failed:", failed)
    return run


@scenario
def vision_ops(ctx):
    """kornia's functional API on device images: filters (gaussian, box, median, bilateral, sobel, laplacian,
    canny, unsharp, motion blur), colour conversions (HSV, HLS, LAB, LUV, YCbCr, YUV, XYZ, raw/Bayer,
    grayscale), enhance (adjust_*, equalize, equalize_clahe, normalize/denormalize, ZCA whitening fit, histogram),
    morphology (dilation, erosion, opening, closing, gradient, top/black hat), geometry (rotate, translate,
    scale, shear, warp_affine, warp_perspective, get_perspective_transform, find_homography_dlt and
    _iterated, RANSAC homography, resize, rescale, pyrdown/pyrup, build_pyramid, remap, crop_and_resize,
    depth_to_3d, normals, epipolar helpers, Boxes/Keypoints), contrib (connected_components, KMeans,
    extract/combine_tensor_patches, distance_transform, histogram_matching), losses and metrics."""
    import kornia
    import kornia.color as C
    import kornia.contrib as KC
    import kornia.enhance as E
    import kornia.filters as Fi
    import kornia.geometry as G
    import kornia.losses as L
    import kornia.metrics as M
    import kornia.morphology as Mo

    def run():
        torch.manual_seed(0)
        x = _imgs(ctx)
        gray = C.rgb_to_grayscale(x)
        failed = {}

        def go(name, fn):
            try:
                fn()
            except Exception as exc:  # noqa: BLE001
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]

        for name, fn in [
            ("gaussian", lambda: Fi.gaussian_blur2d(x, (5, 5), (1.5, 1.5))), ("box", lambda: Fi.box_blur(x, (3, 3))),
            ("median", lambda: Fi.median_blur(x, (3, 3))), ("bilateral", lambda: Fi.bilateral_blur(x, (5, 5), 0.1,
                                                                                                  (1.5, 1.5))),
            ("sobel", lambda: Fi.sobel(x)), ("laplacian", lambda: Fi.laplacian(x, 3)), ("canny", lambda: Fi.canny(x)),
            ("unsharp", lambda: Fi.unsharp_mask(x, (3, 3), (1.5, 1.5))),
            ("motion", lambda: Fi.motion_blur(x, 5, 35.0, 0.5)), ("spatial_gradient", lambda: Fi.spatial_gradient(x)),
            ("hsv", lambda: C.hsv_to_rgb(C.rgb_to_hsv(x))), ("hls", lambda: C.hls_to_rgb(C.rgb_to_hls(x))),
            ("lab", lambda: C.lab_to_rgb(C.rgb_to_lab(x))), ("luv", lambda: C.luv_to_rgb(C.rgb_to_luv(x))),
            ("ycbcr", lambda: C.ycbcr_to_rgb(C.rgb_to_ycbcr(x))), ("yuv", lambda: C.yuv_to_rgb(C.rgb_to_yuv(x))),
            ("xyz", lambda: C.xyz_to_rgb(C.rgb_to_xyz(x))), ("raw", lambda: C.raw_to_rgb(gray, C.CFA.BG)),
            ("adjust", lambda: (E.adjust_brightness(x, 0.1), E.adjust_contrast(x, 1.2), E.adjust_gamma(x, 0.8),
                                E.adjust_hue(x, 0.1), E.adjust_saturation(x, 1.2), E.adjust_sigmoid(x),
                                E.adjust_log(x), E.posterize(x, 3), E.solarize(x, 0.5), E.sharpness(x, 0.5),
                                E.invert(x))),
            ("equalize", lambda: (E.equalize(x), E.equalize_clahe(x, clip_limit=2.0, grid_size=(4, 4)))),
            ("histogram", lambda: E.histogram(gray.flatten(1), torch.linspace(0, 1, 16, device=ctx.device),
                                              torch.tensor(0.9, device=ctx.device))),
            ("zca", lambda: E.ZCAWhitening().fit(x.flatten(1)[:, :64])),
            ("normalize", lambda: E.normalize_min_max(x)),
            ("morph", lambda: [getattr(Mo, f)(x, torch.ones(3, 3, device=ctx.device)) for f in
                               ("dilation", "erosion", "opening", "closing", "gradient", "top_hat", "bottom_hat")]),
            ("rotate", lambda: G.rotate(x, torch.tensor([30.0] * 4, device=ctx.device))),
            ("translate", lambda: G.translate(x, torch.tensor([[4.0, -2.0]] * 4, device=ctx.device))),
            ("scale", lambda: G.scale(x, torch.tensor([[1.2, 1.2]] * 4, device=ctx.device))),
            ("shear", lambda: G.shear(x, torch.tensor([[0.1, 0.0]] * 4, device=ctx.device))),
            ("resize", lambda: (G.resize(x, (32, 40), antialias=True), G.rescale(x, 0.5))),
            ("pyramid", lambda: (G.pyrdown(x), G.pyrup(x), G.build_pyramid(x, 3), G.build_laplacian_pyramid(x, 3))),
            ("crop", lambda: G.crop_and_resize(x, torch.tensor([[[4.0, 4.0], [40.0, 4.0], [40.0, 40.0],
                                                                 [4.0, 40.0]]] * 4, device=ctx.device), (24, 24))),
            ("remap", lambda: G.remap(x, *kornia.utils.create_meshgrid(64, 64, False, ctx.device)[0].permute(2, 0, 1)
                                      .unsqueeze(1).repeat(1, 4, 1, 1))),
        ]:
            go(name, fn)

        def homography():
            src = torch.rand(1, 60, 2, device=ctx.device) * 60
            H = torch.tensor([[[1.0, 0.1, 3.0], [0.05, 1.0, -2.0], [1e-4, 0.0, 1.0]]], device=ctx.device)
            dst = G.transform_points(H, src)
            dst[:, :10] += torch.rand(1, 10, 2, device=ctx.device) * 20
            w = torch.ones(1, 60, device=ctx.device)
            Hd = G.find_homography_dlt(src, dst, w)
            G.find_homography_dlt_iterated(src, dst, w, soft_inl_th=3.0, n_iter=3)
            ransac = G.RANSAC("homography", inl_th=2.0, batch_size=64, max_iter=3)
            Hr, inl = ransac(src[0], dst[0])
            G.warp_perspective(x, Hd.expand(4, 3, 3), (64, 64))
            G.warp_affine(x, Hd[:, :2].expand(4, 2, 3), (64, 64))
            G.get_perspective_transform(src[:, :4], dst[:, :4])
            G.homography.oneway_transfer_error(src, dst, Hd)
            Fm = G.epipolar.find_fundamental(src, dst, w)
            G.epipolar.sampson_epipolar_distance(src, dst, Fm)
            K_ = torch.eye(3, device=ctx.device)[None]
            Em = G.epipolar.essential_from_fundamental(Fm, K_, K_)
            G.epipolar.motion_from_essential(Em)
            depth = torch.rand(1, 1, 32, 32, device=ctx.device) + 1.0
            G.depth.depth_to_3d_v2(depth[0], K_)
            G.depth.depth_to_normals(depth, K_)
            bx = G.boxes.Boxes.from_tensor(torch.tensor([[[4.0, 4.0, 20.0, 24.0]]], device=ctx.device), mode="xyxy")
            bx.to_mask(64, 64)
            bx.get_boxes_shape()
            G.keypoints.Keypoints(torch.rand(1, 5, 2, device=ctx.device) * 60).transform_keypoints(H)

        def contrib():
            bw = (gray > 0.6).float()
            KC.connected_components(bw, num_iterations=20)
            KC.distance_transform(bw)
            p = KC.extract_tensor_patches(x, 16, 16)
            KC.combine_tensor_patches(p, original_size=(64, 64), window_size=16, stride=16)
            km = KC.KMeans(4, None, 1e-4, 10, 0)
            km.fit(torch.rand(200, 3, device=ctx.device))
            km.predict(torch.rand(10, 3, device=ctx.device))
            KC.histogram_matching(x[0], x[1])

        def losses_metrics():
            y = x.flip(0)
            lbl = torch.randint(0, 3, (4, 64, 64), device=ctx.device)
            logit = torch.randn(4, 3, 64, 64, device=ctx.device, requires_grad=True)
            tot = (L.ssim_loss(x, y, 5) + L.psnr_loss(x, y, 1.0) + L.focal_loss(logit, lbl, 0.5, reduction="mean")
                   + L.dice_loss(logit, lbl) + L.tversky_loss(logit, lbl, 0.5, 0.5) + L.total_variation(x).mean()
                   + L.charbonnier_loss(x, y, "mean"))
            if hasattr(L, "MS_SSIMLoss"):
                tot = tot + L.MS_SSIMLoss().to(ctx.device)(x, y)  # its Gaussian kernels are buffers
            tot.backward()
            L.HausdorffERLoss().to(ctx.device)(logit[:, :, :32, :32], lbl[:, None, :32, :32])
            pred = logit.argmax(1)
            M.psnr(x, y, 1.0)
            M.ssim(x, y, 5)
            M.accuracy(logit.mean((2, 3)), lbl[:, 0, 0])
            M.confusion_matrix(pred.flatten()[None], lbl.flatten()[None], 3)
            M.mean_iou(pred.flatten()[None], lbl.flatten()[None], 3)
            meter = M.AverageMeter()
            meter.update(tot.detach(), 4)
            M.mean_average_precision([torch.tensor([[4.0, 4.0, 20.0, 20.0]], device=ctx.device)],
                                     [torch.tensor([1], device=ctx.device)], [torch.tensor([0.9], device=ctx.device)],
                                     [torch.tensor([[5.0, 5.0, 21.0, 19.0]], device=ctx.device)],
                                     [torch.tensor([1], device=ctx.device)], 2)

        for name, fn in (("homography", homography), ("contrib", contrib), ("losses_metrics", losses_metrics)):
            go(name, fn)
        if failed:
            print("ops that failed:", failed)
    return run


@scenario
def features_matching(ctx):
    """Local features without downloaded weights: ScaleSpaceDetector + SIFTDescriptor through SIFTFeature,
    Harris/GFTT/Hessian responses, LAF utilities (scale, orientation with LAFOrienter, affine shape,
    extract_patches_from_pyramid), HardNet/SOSNet/TFeat/HyNet descriptors with pretrained=False (MKD always loads weights),
    DescriptorMatcher (nn, mnn, snn, smnn) and LocalFeatureMatcher on a pair of images, a KeyNet-free
    DenseSIFT, and an ImageStitcher-free homography from the matches."""
    import kornia.feature as KF
    import kornia.geometry as G

    def run():
        torch.manual_seed(0)
        img1 = _imgs(ctx, b=1, c=1, h=96, w=96, seed=1)
        img2 = G.rotate(img1, torch.tensor([10.0], device=ctx.device))
        failed = {}

        def go(name, fn):
            try:
                return fn()
            except Exception as exc:  # noqa: BLE001
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]

        sift = KF.SIFTFeature(num_features=64, upright=False, device=ctx.device)
        r1 = go("sift1", lambda: sift(img1))
        r2 = go("sift2", lambda: sift(img2))
        for name, fn in [
            ("harris", lambda: KF.harris_response(img1)), ("gftt", lambda: KF.gftt_response(img1)),
            ("hessian", lambda: KF.hessian_response(img1)), ("dog", lambda: KF.BlobDoG()(img1[:, :, None].repeat(1, 1, 3, 1, 1))),
            ("dense_sift", lambda: KF.DenseSIFTDescriptor()(img1)),
        ]:
            go(name, fn)
        if r1 is not None and r2 is not None:
            (laf1, resp1, d1), (laf2, resp2, d2) = r1, r2
            for m in ("nn", "mnn", "snn", "smnn"):
                go("match_" + m, lambda m=m: KF.DescriptorMatcher(m, 0.9)(d1[0], d2[0]))
            go("laf", lambda: (KF.get_laf_scale(laf1), KF.get_laf_center(laf1), KF.get_laf_orientation(laf1),
                               KF.laf_to_boundary_points(laf1), KF.scale_laf(laf1, 2.0), KF.make_upright(laf1),
                               KF.extract_patches_from_pyramid(img1, laf1, 32)))
            go("orient", lambda: KF.LAFOrienter(32, angle_detector=KF.PatchDominantGradientOrientation(32))(laf1, img1))
            go("affine_shape", lambda: KF.LAFAffineShapeEstimator(32)(laf1, img1))
            for desc in ("HardNet", "SOSNet", "TFeat", "HyNet"):  # MKDDescriptor always loads weights
                go(desc, lambda desc=desc: KF.LAFDescriptor(getattr(KF, desc)(pretrained=False).to(ctx.device),
                                                            patch_size={"TFeat": 32}.get(desc, 32))(img1, laf1))

            def match_and_fit():
                dist, idx = KF.match_smnn(d1[0], d2[0], 0.95)
                if idx.shape[0] >= 8:
                    p1 = KF.get_laf_center(laf1)[0, idx[:, 0]]
                    p2 = KF.get_laf_center(laf2)[0, idx[:, 1]]
                    G.RANSAC("homography", max_iter=3)(p1, p2)
                matcher = KF.LocalFeatureMatcher(KF.SIFTFeature(32, device=ctx.device), KF.DescriptorMatcher("snn", 0.9))
                matcher({"image0": img1, "image1": img2})
            go("match_fit", match_and_fit)
        if failed:
            print("feature parts that failed:", failed)
    return run
