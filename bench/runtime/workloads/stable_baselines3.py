"""stable-baselines3: reinforcement-learning training on the GPU the way its docs show it, on tiny
gymnasium environments (classic control and the test environments sb3 ships; nothing downloaded):
on-policy (PPO with MLP, gSDE, CNN and dict-observation policies, VecNormalize; A2C), off-policy
(SAC with automatic entropy, TD3, DDPG, DQN, HER on the bit-flipping goal env), and the
surrounding machinery (callbacks, evaluation, the logger's stdout/csv/tensorboard outputs,
save/load of models and replay buffers, predict)."""

import os

import torch

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


def package_root():
    import stable_baselines3

    return os.path.dirname(os.path.realpath(stable_baselines3.__file__))


def _logger(ctx, name, formats=("stdout", "csv")):
    from stable_baselines3.common.logger import configure

    fmts = list(formats)
    if "tensorboard" in fmts:
        try:
            import tensorboard  # noqa: F401
        except ImportError:
            fmts.remove("tensorboard")
    return configure(os.path.join(ctx.tmp, name), fmts)


@scenario
def on_policy(ctx):
    """PPO on CartPole (4 envs, VecNormalize, clip_range_vf, target_kl), PPO with gSDE on Pendulum,
    PPO with a CnnPolicy on FakeImageEnv, PPO with a MultiInputPolicy on SimpleMultiObsEnv, A2C on
    CartPole (RMSpropTFLike, normalize_advantage) and on Pendulum; each logs to stdout and csv."""
    from stable_baselines3 import A2C, PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.envs import FakeImageEnv, SimpleMultiObsEnv
    from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
    from stable_baselines3.common.vec_env import VecNormalize

    def run():
        dev = ctx.device
        venv = VecNormalize(make_vec_env("CartPole-v1", n_envs=4, seed=0), norm_obs=True, norm_reward=True)
        m = PPO("MlpPolicy", venv, n_steps=32, batch_size=32, n_epochs=2, clip_range_vf=0.2, target_kl=0.5,
                policy_kwargs=dict(net_arch=[32, 32]), device=dev, seed=0, verbose=0)
        m.set_logger(_logger(ctx, "ppo"))
        m.learn(total_timesteps=256)
        m = PPO("MlpPolicy", "Pendulum-v1", n_steps=64, batch_size=32, n_epochs=2, use_sde=True, sde_sample_freq=4,
                policy_kwargs=dict(net_arch=[32]), device=dev, seed=0)
        m.set_logger(_logger(ctx, "ppo_sde"))
        m.learn(total_timesteps=128)
        m = PPO("CnnPolicy", FakeImageEnv(screen_height=40, screen_width=40, n_channels=1), n_steps=32,
                batch_size=16, n_epochs=1, device=dev, seed=0)
        m.set_logger(_logger(ctx, "ppo_cnn"))
        m.learn(total_timesteps=64)
        m = PPO("MultiInputPolicy", SimpleMultiObsEnv(random_start=False), n_steps=32, batch_size=16, n_epochs=1,
                device=dev, seed=0)
        m.set_logger(_logger(ctx, "ppo_dict"))
        m.learn(total_timesteps=64)
        m = A2C("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=8, normalize_advantage=True,
                policy_kwargs=dict(optimizer_class=RMSpropTFLike, optimizer_kwargs=dict(eps=1e-5)),
                device=dev, seed=0)
        m.set_logger(_logger(ctx, "a2c"))
        m.learn(total_timesteps=128)
        m = A2C("MlpPolicy", "Pendulum-v1", n_steps=16, device=dev, seed=0)
        m.set_logger(_logger(ctx, "a2c_box"))
        m.learn(total_timesteps=64)
    return run


@scenario
def off_policy(ctx):
    """SAC (ent_coef='auto', gSDE), TD3 (policy_delay, target noise), DDPG (action noise) on Pendulum;
    DQN on CartPole (exploration schedule, target updates, max_grad_norm); SAC and DQN with
    HerReplayBuffer on BitFlippingEnv (continuous and discrete)."""
    import numpy as np
    from stable_baselines3 import DDPG, DQN, SAC, TD3, HerReplayBuffer
    from stable_baselines3.common.envs import BitFlippingEnv
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise

    def run():
        dev = ctx.device
        # a fresh dict each time: sb3 writes use_sde into the policy_kwargs it is given
        def common():
            return dict(learning_starts=32, buffer_size=2000, batch_size=32, device=dev, seed=0,
                        policy_kwargs=dict(net_arch=[32, 32]))
        m = SAC("MlpPolicy", "Pendulum-v1", ent_coef="auto", train_freq=2, gradient_steps=2, **common())
        m.set_logger(_logger(ctx, "sac"))
        m.learn(total_timesteps=96)
        m = SAC("MlpPolicy", "Pendulum-v1", use_sde=True, ent_coef="auto_0.1", target_entropy=-1.0, **common())
        m.set_logger(_logger(ctx, "sac_sde"))
        m.learn(total_timesteps=64)
        m = TD3("MlpPolicy", "Pendulum-v1", policy_delay=2, target_policy_noise=0.2,
                action_noise=NormalActionNoise(np.zeros(1), 0.1 * np.ones(1)), **common())
        m.set_logger(_logger(ctx, "td3"))
        m.learn(total_timesteps=80)
        m = DDPG("MlpPolicy", "Pendulum-v1", action_noise=OrnsteinUhlenbeckActionNoise(np.zeros(1), 0.1 * np.ones(1)),
                 **common())
        m.set_logger(_logger(ctx, "ddpg"))
        m.learn(total_timesteps=64)
        m = DQN("MlpPolicy", "CartPole-v1", exploration_fraction=0.5, target_update_interval=16, train_freq=4,
                gradient_steps=2, max_grad_norm=10, **common())
        m.set_logger(_logger(ctx, "dqn"))
        m.learn(total_timesteps=128)
        her = dict(replay_buffer_class=HerReplayBuffer,
                   replay_buffer_kwargs=dict(n_sampled_goal=4, goal_selection_strategy="future"))
        m = SAC("MultiInputPolicy", BitFlippingEnv(n_bits=4, continuous=True, max_steps=4), learning_starts=16,
                buffer_size=1000, batch_size=16, device=dev, seed=0, **her)
        m.set_logger(_logger(ctx, "sac_her"))
        m.learn(total_timesteps=48)
        m = DQN("MultiInputPolicy", BitFlippingEnv(n_bits=4, max_steps=4), learning_starts=16, buffer_size=1000,
                batch_size=16, device=dev, seed=0, **her)
        m.set_logger(_logger(ctx, "dqn_her"))
        m.learn(total_timesteps=48)
    return run


@scenario
def callbacks_eval_save(ctx):
    """PPO and SAC with a CallbackList (EvalCallback with StopTrainingOnNoModelImprovement,
    CheckpointCallback saving replay buffer and VecNormalize, StopTrainingOnMaxEpisodes, ProgressBar-free),
    the logger's stdout/csv/tensorboard outputs and record of a tensor-free dict; evaluate_policy,
    predict (deterministic, batched, with state), save/load onto the device, save/load_replay_buffer,
    get_parameters/set_parameters, policy.evaluate_actions and predict_values, set_random_seed."""
    import numpy as np
    from stable_baselines3 import PPO, SAC
    from stable_baselines3.common.callbacks import (CallbackList, CheckpointCallback, EvalCallback,
                                                    StopTrainingOnMaxEpisodes, StopTrainingOnNoModelImprovement)
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.utils import obs_as_tensor, set_random_seed

    def run():
        dev = ctx.device
        set_random_seed(0, using_cuda=ctx.cuda)
        import gymnasium as gym

        eval_env = Monitor(gym.make("CartPole-v1"))
        stop = StopTrainingOnNoModelImprovement(max_no_improvement_evals=3, min_evals=1)
        cbs = CallbackList([
            EvalCallback(eval_env, eval_freq=64, n_eval_episodes=2, callback_after_eval=stop,
                         best_model_save_path=os.path.join(ctx.tmp, "best"), log_path=os.path.join(ctx.tmp, "eval")),
            CheckpointCallback(save_freq=64, save_path=os.path.join(ctx.tmp, "ckpt"), name_prefix="ppo"),
        ])
        m = PPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=32, batch_size=32, n_epochs=1,
                device=dev, seed=0)
        m.set_logger(_logger(ctx, "ppo_cb", ("stdout", "csv", "tensorboard")))
        m.learn(total_timesteps=192, callback=cbs, tb_log_name="ppo")
        mean, std = evaluate_policy(m, eval_env, n_eval_episodes=2, deterministic=True)
        obs = np.stack([eval_env.reset(seed=i)[0] for i in range(3)])
        m.predict(obs, deterministic=True)
        m.predict(obs[0], deterministic=False)
        with torch.no_grad():
            t = obs_as_tensor(obs, m.device)
            m.policy.predict_values(t)
            m.policy.evaluate_actions(t, torch.zeros(3, device=m.device, dtype=torch.long))
            m.policy.get_distribution(t).entropy()
        path = os.path.join(ctx.tmp, "ppo.zip")
        m.save(path)
        m2 = PPO.load(path, device=dev)
        m2.set_parameters(m.get_parameters())
        m2.predict(obs, deterministic=True)

        pend = Monitor(gym.make("Pendulum-v1"))
        sac = SAC("MlpPolicy", pend, learning_starts=16, buffer_size=500, batch_size=16, device=dev, seed=0,
                  policy_kwargs=dict(net_arch=[32]))
        sac.set_logger(_logger(ctx, "sac_cb", ("stdout", "csv", "tensorboard")))
        sac.learn(total_timesteps=48, callback=[StopTrainingOnMaxEpisodes(max_episodes=5),
                                                CheckpointCallback(save_freq=32, save_path=os.path.join(ctx.tmp, "sck"),
                                                                   save_replay_buffer=True)])
        evaluate_policy(sac, pend, n_eval_episodes=1, return_episode_rewards=True)
        rb = os.path.join(ctx.tmp, "rb.pkl")
        sac.save_replay_buffer(rb)
        sac.save(os.path.join(ctx.tmp, "sac.zip"))
        s2 = SAC.load(os.path.join(ctx.tmp, "sac.zip"), env=pend, device=dev)
        s2.load_replay_buffer(rb)
        s2.learn(total_timesteps=16, reset_num_timesteps=False)
        assert mean is not None and std is not None
    return run
