"""MONAI: medical-image training and evaluation on the GPU the way its tutorials run them, on
small synthetic volumes (spheres in noise; nothing downloaded): the 3D segmentation tutorial loop
(dictionary transforms, CacheDataset, DataLoader, UNet, DiceLoss, Adam, loss.item() per step,
sliding-window validation, decollate_batch + AsDiscrete post-processing, DiceMetric aggregate,
best-metric checkpoint), a zoo of networks and losses trained a step each, and metrics, inferers
and array transforms on device tensors."""

import os

import numpy as np
import torch

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import monai

    return os.path.dirname(os.path.realpath(monai.__file__))


def _volumes(n=6, size=32, seed=0, channels=1):
    rng = np.random.default_rng(seed)
    items = []
    zz, yy, xx = np.meshgrid(*[np.arange(size)] * 3, indexing="ij")
    for i in range(n):
        c = rng.integers(8, size - 8, 3)
        r = rng.integers(4, 8)
        lab = (((zz - c[0]) ** 2 + (yy - c[1]) ** 2 + (xx - c[2]) ** 2) < r * r).astype(np.float32)
        img = lab * 200.0 + rng.normal(0, 40, lab.shape).astype(np.float32) - 50.0
        items.append({"image": img[None].repeat(channels, 0), "label": lab[None]})
    return items


@scenario
def seg_train(ctx):
    """The spleen-segmentation tutorial loop at toy size: Compose of ScaleIntensityRanged,
    CropForegroundd, RandCropByPosNegLabeld, RandFlipd, RandRotate90d, RandShiftIntensityd,
    EnsureTyped(device=cuda) over CacheDataset and a DataLoader with list_data_collate; UNet with
    residual units and batch norm, DiceLoss(to_onehot_y, softmax) / DiceCELoss under AMP with a
    GradScaler, epoch loss via loss.item(); validation each epoch with sliding_window_inference,
    decollate_batch, AsDiscrete(argmax, to_onehot), DiceMetric and HausdorffDistanceMetric
    aggregate().item(), best-metric tracking and torch.save."""
    from monai.data import CacheDataset, DataLoader, decollate_batch, list_data_collate
    from monai.inferers import sliding_window_inference
    from monai.losses import DiceCELoss, DiceLoss
    from monai.metrics import DiceMetric, HausdorffDistanceMetric
    from monai.networks.layers import Norm
    from monai.networks.nets import UNet
    from monai.transforms import (AsDiscrete, Compose, CropForegroundd, EnsureTyped, RandCropByPosNegLabeld,
                                  RandFlipd, RandRotate90d, RandShiftIntensityd, ScaleIntensityRanged)
    from monai.utils import set_determinism

    dev = ctx.device
    train_tf = Compose([
        ScaleIntensityRanged(keys=["image"], a_min=-57, a_max=164, b_min=0.0, b_max=1.0, clip=True),
        CropForegroundd(keys=["image", "label"], source_key="image", allow_smaller=True),
        EnsureTyped(keys=["image", "label"], device=dev, track_meta=False),
        RandCropByPosNegLabeld(keys=["image", "label"], label_key="label", spatial_size=(24, 24, 24), pos=1, neg=1,
                               num_samples=2, image_key="image", image_threshold=0),
        RandFlipd(keys=["image", "label"], spatial_axis=[0], prob=0.5),
        RandRotate90d(keys=["image", "label"], prob=0.5, max_k=3),
        RandShiftIntensityd(keys=["image"], offsets=0.10, prob=0.5),
    ])
    val_tf = Compose([
        ScaleIntensityRanged(keys=["image"], a_min=-57, a_max=164, b_min=0.0, b_max=1.0, clip=True),
        EnsureTyped(keys=["image", "label"], device=dev, track_meta=False),
    ])
    train_ds = CacheDataset(data=_volumes(6), transform=train_tf, cache_rate=1.0, num_workers=0, progress=False)
    val_ds = CacheDataset(data=_volumes(2, seed=1), transform=val_tf, cache_rate=1.0, num_workers=0, progress=False)
    train_loader = DataLoader(train_ds, batch_size=2, shuffle=True, num_workers=0, collate_fn=list_data_collate)
    val_loader = DataLoader(val_ds, batch_size=1, num_workers=0)
    post_pred = Compose([AsDiscrete(argmax=True, to_onehot=2)])
    post_label = Compose([AsDiscrete(to_onehot=2)])

    def run():
        set_determinism(seed=0)
        model = UNet(spatial_dims=3, in_channels=1, out_channels=2, channels=(8, 16, 32, 64), strides=(2, 2, 2),
                     num_res_units=2, norm=Norm.BATCH).to(dev)
        best = -1.0
        for loss_function, amp in [(DiceLoss(to_onehot_y=True, softmax=True), False),
                                   (DiceCELoss(to_onehot_y=True, softmax=True, lambda_ce=0.5), True)]:
            optimizer = torch.optim.Adam(model.parameters(), 1e-3)
            scaler = torch.amp.GradScaler(dev.type, enabled=amp and ctx.cuda)
            dice_metric = DiceMetric(include_background=False, reduction="mean")
            hd_metric = HausdorffDistanceMetric(include_background=False, percentile=95)
            for epoch in range(2):
                model.train()
                epoch_loss, step = 0, 0
                for batch_data in train_loader:
                    step += 1
                    inputs, labels = batch_data["image"].to(dev), batch_data["label"].to(dev)
                    optimizer.zero_grad()
                    with torch.autocast(dev.type, enabled=amp and ctx.cuda):
                        outputs = model(inputs)
                        loss = loss_function(outputs, labels)
                    scaler.scale(loss).backward()
                    scaler.step(optimizer)
                    scaler.update()
                    epoch_loss += loss.item()
                epoch_loss /= step
                print(f"epoch {epoch + 1} average loss: {epoch_loss:.4f}")
                model.eval()
                with torch.no_grad():
                    for val_data in val_loader:
                        val_inputs, val_labels = val_data["image"].to(dev), val_data["label"].to(dev)
                        val_outputs = sliding_window_inference(val_inputs, (24, 24, 24), 4, model, overlap=0.25,
                                                               mode="gaussian")
                        val_outputs = [post_pred(i) for i in decollate_batch(val_outputs)]
                        val_labels = [post_label(i) for i in decollate_batch(val_labels)]
                        dice_metric(y_pred=val_outputs, y=val_labels)
                        hd_metric(y_pred=val_outputs, y=val_labels)
                    metric = dice_metric.aggregate().item()
                    hd = hd_metric.aggregate().item()
                    dice_metric.reset(); hd_metric.reset()
                    if metric > best:
                        best = metric
                        torch.save(model.state_dict(), os.path.join(ctx.tmp, "best_metric_model.pth"))
                    print(f"current mean dice: {metric:.4f} hd95 {hd:.2f} best mean dice: {best:.4f}")
        return best

    return run


@scenario
def networks_losses(ctx):
    """One training step (forward, loss, backward, Adam) of 14 networks from monai.networks.nets at
    toy size (BasicUNet, SegResNet, SegResNetVAE, UNETR, SwinUNETR, DynUNet with deep supervision,
    AttentionUnet, VNet, DenseNet121, resnet10, EfficientNetBN, ViT, AutoEncoder, VarAutoEncoder), and
    forward/backward of 20 losses (Dice variants, Focal, Tversky, GeneralizedWassersteinDice,
    Hausdorff-DT, clDice, Contrastive, MutualInformation, LNCC, BendingEnergy, SSIM, MultiScale,
    DeepSupervision, MaskedDice, BarlowTwins)."""
    from monai import losses as L
    from monai.networks import nets as N

    dev = ctx.device

    def nets():
        return [
            ("basicunet", N.BasicUNet(3, 1, 2, features=(4, 4, 8, 16, 32, 4)), (1, 1, 32, 32, 32), "seg"),
            ("segresnet", N.SegResNet(spatial_dims=3, init_filters=8, in_channels=1, out_channels=2), (1, 1, 32, 32, 32), "seg"),
            ("segresnetvae", N.SegResNetVAE(input_image_size=(32, 32, 32), spatial_dims=3, init_filters=8,
                                            in_channels=1, out_channels=2), (1, 1, 32, 32, 32), "vae"),
            ("unetr", N.UNETR(in_channels=1, out_channels=2, img_size=(32, 32, 32), feature_size=4, hidden_size=48,
                              mlp_dim=96, num_heads=4), (1, 1, 32, 32, 32), "seg"),
            ("swinunetr", N.SwinUNETR(in_channels=1, out_channels=2, feature_size=12, depths=(1, 1, 1, 1),
                                      num_heads=(1, 1, 1, 1)), (1, 1, 64, 64, 64), "seg"),
            ("dynunet", N.DynUNet(3, 1, 2, kernel_size=[3, 3, 3], strides=[1, 2, 2], upsample_kernel_size=[2, 2],
                                  filters=[4, 8, 16], deep_supervision=True, deep_supr_num=1), (1, 1, 32, 32, 32), "ds"),
            ("attentionunet", N.AttentionUnet(3, 1, 2, channels=(4, 8, 16), strides=(2, 2)), (1, 1, 32, 32, 32), "seg"),
            ("vnet", N.VNet(spatial_dims=3, in_channels=1, out_channels=2), (1, 1, 32, 32, 32), "seg"),
            ("densenet121", N.DenseNet121(spatial_dims=2, in_channels=1, out_channels=3), (2, 1, 32, 32), "cls"),
            ("resnet10", N.resnet10(spatial_dims=3, n_input_channels=1, num_classes=3), (2, 1, 32, 32, 32), "cls"),
            ("efficientnet", N.EfficientNetBN("efficientnet-b0", pretrained=False, spatial_dims=2, in_channels=1,
                                              num_classes=3), (2, 1, 32, 32), "cls"),
            ("vit", N.ViTAutoEnc(in_channels=1, img_size=(32, 32, 32), patch_size=(4, 4, 4), hidden_size=48,
                                 mlp_dim=96, num_layers=2, num_heads=4), (1, 1, 32, 32, 32), "ae_tuple"),
            ("autoencoder", N.AutoEncoder(spatial_dims=2, in_channels=1, out_channels=1, channels=(4, 8), strides=(2, 2)),
             (2, 1, 32, 32), "ae"),
            ("varautoencoder", N.VarAutoEncoder(spatial_dims=2, in_shape=(1, 32, 32), out_channels=1, latent_size=8,
                                                channels=(4, 8), strides=(2, 2)), (2, 1, 32, 32), "vae_tuple"),
        ]

    def run():
        torch.manual_seed(0)
        dice = L.DiceCELoss(to_onehot_y=True, softmax=True)
        for name, net, shape, kind in nets():
            net = net.to(dev)
            opt = torch.optim.Adam(net.parameters(), 1e-3)
            x = torch.randn(*shape, device=dev)
            net.train()
            out = net(x)
            if kind == "seg":
                loss = dice(out, (torch.rand(shape[0], 1, *shape[2:], device=dev) > 0.5).float())
            elif kind == "vae":
                out, vae_loss = out
                loss = dice(out, torch.zeros(shape[0], 1, *shape[2:], device=dev)) + vae_loss
            elif kind == "ds":
                loss = L.DeepSupervisionLoss(dice)(out.unbind(1), (torch.rand(shape[0], 1, *shape[2:], device=dev) > 0.5).float())
            elif kind == "cls":
                loss = torch.nn.functional.cross_entropy(out, torch.randint(0, 3, (shape[0],), device=dev))
            elif kind == "ae":
                loss = torch.nn.functional.mse_loss(out, x)
            elif kind == "ae_tuple":
                loss = torch.nn.functional.mse_loss(out[0], x)
            else:
                recon, mu, logvar, _ = out
                loss = torch.nn.functional.mse_loss(recon, x) - 0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"{name}: loss {loss.item():.4f}")
        # losses
        p = torch.randn(2, 3, 16, 16, 16, device=dev, requires_grad=True)
        y = torch.randint(0, 3, (2, 1, 16, 16, 16), device=dev)
        yo = torch.nn.functional.one_hot(y[:, 0], 3).permute(0, 4, 1, 2, 3).float()
        p2 = torch.randn(2, 1, 32, 32, device=dev, requires_grad=True)
        y2 = torch.rand(2, 1, 32, 32, device=dev)
        seg_losses = [L.DiceLoss(to_onehot_y=True, softmax=True), L.DiceLoss(sigmoid=True, batch=True),
                      L.GeneralizedDiceLoss(to_onehot_y=True, softmax=True), L.DiceFocalLoss(to_onehot_y=True, softmax=True),
                      L.GeneralizedDiceFocalLoss(to_onehot_y=True, softmax=True), L.FocalLoss(to_onehot_y=True, gamma=2.0),
                      L.TverskyLoss(to_onehot_y=True, softmax=True, alpha=0.3, beta=0.7),
                      L.HausdorffDTLoss(to_onehot_y=True, softmax=True), L.LogHausdorffDTLoss(to_onehot_y=True, softmax=True),
                      L.GeneralizedWassersteinDiceLoss(dist_matrix=torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.5],
                                                                                 [1.0, 0.5, 0.0]], device=dev))]
        for i, lf in enumerate(seg_losses):
            target = y[:, 0] if isinstance(lf, L.GeneralizedWassersteinDiceLoss) else (yo if i == 1 else y)
            lf(p, target).backward()
        L.SoftclDiceLoss()(torch.sigmoid(p2), (y2 > 0.5).float()).backward()
        L.SoftDiceclDiceLoss()(torch.sigmoid(p2), (y2 > 0.5).float()).backward()
        L.MaskedDiceLoss(sigmoid=True)(p2, (y2 > 0.5).float(), mask=(y2 > 0.2).float()).backward()
        L.ContrastiveLoss(temperature=0.5)(torch.randn(8, 16, device=dev, requires_grad=True),
                                           torch.randn(8, 16, device=dev)).backward()
        L.BarlowTwinsLoss()(torch.randn(8, 16, device=dev, requires_grad=True), torch.randn(8, 16, device=dev)).backward()
        L.GlobalMutualInformationLoss()(torch.sigmoid(p2), y2).backward()
        L.LocalNormalizedCrossCorrelationLoss(spatial_dims=2, kernel_size=3)(p2, y2).backward()
        L.BendingEnergyLoss()(torch.randn(2, 2, 16, 16, device=dev, requires_grad=True)).backward()
        L.SSIMLoss(spatial_dims=2, data_range=1.0, win_size=5)(torch.sigmoid(p2), y2).backward()
        L.MultiScaleLoss(L.DiceLoss(sigmoid=True), scales=[0, 1])(p2, (y2 > 0.5).float()).backward()

    return run


@scenario
def metrics_transforms(ctx):
    """Metrics accumulated over batches and aggregated (Dice, MeanIoU-style ConfusionMatrix, Hausdorff,
    SurfaceDistance, SurfaceDice, ROCAUC, AveragePrecision, MSE/MAE/RMSE/PSNR, SSIM,
    MultiScaleSSIM, GeneralizedDiceScore, CalibrationError, LossMetric), SlidingWindowInferer and
    SimpleInferer, and array transforms on device tensors: RandAffine, Rand3DElastic, Resize,
    Spacing on a MetaTensor, NormalizeIntensity, RandGaussianNoise/Smooth, CropForeground,
    SpatialPad, RandSpatialCrop, KeepLargestConnectedComponent, FillHoles, LabelToContour,
    RemoveSmallObjects, Activations, AsDiscrete with threshold."""
    from monai import transforms as T
    from monai.data import MetaTensor
    from monai.inferers import SimpleInferer, SlidingWindowInferer
    from monai.losses import DiceLoss
    from monai import metrics as M

    dev = ctx.device
    vols = _volumes(4, seed=3)

    def run():
        torch.manual_seed(0)
        seg_metrics = [M.DiceMetric(include_background=True, reduction="mean_batch"),
                       M.ConfusionMatrixMetric(metric_name=["sensitivity", "precision", "f1 score"], include_background=False),
                       M.HausdorffDistanceMetric(percentile=95), M.SurfaceDistanceMetric(symmetric=True),
                       M.SurfaceDiceMetric(class_thresholds=[1.0, 1.0], include_background=True),
                       M.GeneralizedDiceScore(), M.LossMetric(loss_fn=DiceLoss())]
        reg_metrics = [M.MSEMetric(), M.MAEMetric(), M.RMSEMetric(), M.PSNRMetric(max_val=1.0),
                       M.SSIMMetric(spatial_dims=3, data_range=1.0), M.MultiScaleSSIMMetric(spatial_dims=2, data_range=1.0,
                                                                                            kernel_size=3)]
        cls_metrics = [M.ROCAUCMetric(), M.AveragePrecisionMetric()]
        for it in range(2):
            lab = torch.stack([torch.as_tensor(v["label"]) for v in vols]).to(dev)
            pred = (lab + (torch.rand_like(lab) > 0.97).float()).clamp(0, 1)
            p1h, y1h = torch.cat([1 - pred, pred], 1), torch.cat([1 - lab, lab], 1)
            for m in seg_metrics:
                m(y_pred=p1h, y=y1h)
            img = torch.rand(4, 1, 32, 32, 32, device=dev)
            for m in reg_metrics:
                if isinstance(m, M.MultiScaleSSIMMetric):
                    img2 = torch.rand(4, 1, 48, 48, device=dev)
                    m(y_pred=img2, y=img2 * 0.9 + 0.05)
                else:
                    m(y_pred=img, y=img * 0.9 + 0.05)
            scores = torch.rand(16, 3, device=dev).softmax(-1)
            y = torch.nn.functional.one_hot(torch.randint(0, 3, (16,), device=dev), 3)
            for m in cls_metrics:
                m(y_pred=scores, y=y)
        for m in seg_metrics + reg_metrics + cls_metrics:
            r = m.aggregate()
            r = r if isinstance(r, (list, tuple)) else [r]
            print(type(m).__name__, [x.mean().item() if torch.is_tensor(x) else x for x in r])
            m.reset()
        ce = M.CalibrationErrorMetric(num_bins=10)
        ce(y_pred=torch.rand(4, 2, 8, 8, device=dev), y=torch.randint(0, 2, (4, 2, 8, 8), device=dev).float())
        ce.aggregate()
        net = torch.nn.Conv3d(1, 2, 3, padding=1).to(dev)
        x = torch.rand(1, 1, 40, 40, 40, device=dev)
        SlidingWindowInferer(roi_size=(24, 24, 24), sw_batch_size=4, overlap=0.5, mode="gaussian")(x, net)
        SlidingWindowInferer(roi_size=(24, 24, 24), sw_batch_size=2, sw_device=dev, device=dev, progress=False)(x, net)
        SimpleInferer()(x, net)
        # array transforms on the GPU
        img = torch.as_tensor(vols[0]["image"]).to(dev)
        seg = torch.as_tensor(vols[0]["label"]).to(dev)
        mt = MetaTensor(img, affine=torch.diag(torch.tensor([1.5, 1.5, 2.0, 1.0])))
        tfs = [T.RandAffine(prob=1.0, rotate_range=(0.3, 0.3, 0.3), scale_range=0.1, padding_mode="zeros"),
               T.Rand3DElastic(sigma_range=(5, 7), magnitude_range=(50, 150), prob=1.0),
               T.Resize((24, 24, 24)), T.NormalizeIntensity(nonzero=True), T.RandGaussianNoise(prob=1.0),
               T.RandGaussianSmooth(prob=1.0), T.CropForeground(), T.SpatialPad((40, 40, 40)),
               T.RandSpatialCrop((20, 20, 20), random_size=False), T.ScaleIntensity(), T.RandScaleIntensity(0.1, prob=1.0),
               T.RandAdjustContrast(prob=1.0), T.RandBiasField(prob=1.0), T.HistogramNormalize(num_bins=32),
               T.ThresholdIntensity(0.5, above=False), T.RandCoarseDropout(holes=4, spatial_size=4, prob=1.0)]
        for t in tfs:
            t(img)
        T.Spacing(pixdim=(2.0, 2.0, 2.0))(mt)
        T.KeepLargestConnectedComponent(applied_labels=[1])(seg)
        T.FillHoles(applied_labels=[1])(seg)
        T.LabelToContour()(seg)
        T.RemoveSmallObjects(min_size=10)(seg)
        T.Activations(softmax=True)(torch.randn(2, 8, 8, device=dev))
        T.AsDiscrete(threshold=0.5)(torch.rand(1, 8, 8, device=dev))

    return run
